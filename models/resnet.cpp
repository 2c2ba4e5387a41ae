#include "models/resnet.h"

#include <string>

#include "models/residual_blocks.h"

namespace seg {

namespace {
std::string resnet_arch(int depth, bool dilated) { return "resnet" + std::to_string(depth) + (dilated ? "dilated" : ""); }
}  // namespace

ResNetEncoder::ResNetEncoder(int depth, bool dilated, double bn_momentum)
    : Encoder(resnet_arch(depth, dilated), bn_momentum) {
  SEG_CHECK(depth == 18 || depth == 50 || depth == 101, usage, "ResNet depth ", depth, " is not one of 18, 50, 101");
  conv1_ = register_module("conv1", make_.conv(3, 64, 3, 2, 1));
  bn1_ = register_module("bn1", make_.bn(64));
  conv2_ = register_module("conv2", make_.conv(64, 64, 3, 1, 1));
  bn2_ = register_module("bn2", make_.bn(64));
  conv3_ = register_module("conv3", make_.conv(64, 128, 3, 1, 1));
  bn3_ = register_module("bn3", make_.bn(128));

  const int64_t planes[4] = {64, 128, 256, 512};
  const int64_t strides[4] = {1, 2, 2, 2};
  const int64_t blocks18[4] = {2, 2, 2, 2}, blocks50[4] = {3, 4, 6, 3}, blocks101[4] = {3, 4, 23, 3};
  const int64_t* blocks = depth == 18 ? blocks18 : depth == 50 ? blocks50 : blocks101;
  int64_t inplanes = 128;
  for (int i = 0; i < 4; ++i) {
    const size_t first_conv = make_.num_convs();
    layers_[i] = depth == 18 ? make_residual_layer<BasicBlock>(make_, inplanes, planes[i], blocks[i], strides[i])
                             : make_residual_layer<Bottleneck>(make_, inplanes, planes[i], blocks[i], strides[i]);
    register_module("layer" + std::to_string(i + 1), layers_[i]);
    // dilate_scale 8: layer3 with dilate 2, layer4 with dilate 4.
    if (dilated && i == 2) make_.nostride_dilate(first_conv, 2);
    if (dilated && i == 3) make_.nostride_dilate(first_conv, 4);
    channels_.push_back(inplanes);
  }
  output_stride_ = dilated ? 8 : 32;
}

std::vector<Tensor> ResNetEncoder::forward(const Tensor& images) {
  Tensor x = bn1_->forward_act(conv1_->forward(images), BnActivation::relu);
  x = bn2_->forward_act(conv2_->forward(x), BnActivation::relu);
  x = bn3_->forward_act(conv3_->forward(x), BnActivation::relu);
  x = ops::max_pool2d(x, 3, 2, 1);
  std::vector<Tensor> conv_out;
  for (auto& layer : layers_) {
    x = layer->forward(x);
    conv_out.push_back(x);
  }
  return conv_out;
}

}  // namespace seg
