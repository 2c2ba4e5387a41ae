#include "models/residual_blocks.h"

namespace seg {

BasicBlock::BasicBlock(LayerMaker& make, int64_t inplanes, int64_t planes, int64_t stride,
                       std::shared_ptr<Sequential> downsample)
    : downsample_(std::move(downsample)) {
  conv1_ = register_module("conv1", make.conv(inplanes, planes, 3, stride, 1));
  bn1_ = register_module("bn1", make.bn(planes));
  conv2_ = register_module("conv2", make.conv(planes, planes, 3, 1, 1));
  bn2_ = register_module("bn2", make.bn(planes));
  if (downsample_) register_module("downsample", downsample_);
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor out = bn1_->forward_act(conv1_->forward(x), BnActivation::relu);
  out = bn2_->forward(conv2_->forward(out));
  const Tensor shortcut = downsample_ ? downsample_->forward(x) : x;
  return ops::relu(ops::add(out, shortcut));
}

Bottleneck::Bottleneck(LayerMaker& make, int64_t inplanes, int64_t planes, int64_t stride,
                       std::shared_ptr<Sequential> downsample)
    : downsample_(std::move(downsample)) {
  conv1_ = register_module("conv1", make.conv(inplanes, planes, 1));
  bn1_ = register_module("bn1", make.bn(planes));
  conv2_ = register_module("conv2", make.conv(planes, planes, 3, stride, 1));
  bn2_ = register_module("bn2", make.bn(planes));
  conv3_ = register_module("conv3", make.conv(planes, planes * kExpansion, 1));
  bn3_ = register_module("bn3", make.bn(planes * kExpansion));
  if (downsample_) register_module("downsample", downsample_);
}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor out = bn1_->forward_act(conv1_->forward(x), BnActivation::relu);
  out = bn2_->forward_act(conv2_->forward(out), BnActivation::relu);
  out = bn3_->forward(conv3_->forward(out));
  const Tensor shortcut = downsample_ ? downsample_->forward(x) : x;
  return ops::relu(ops::add(out, shortcut));
}

}  // namespace seg
