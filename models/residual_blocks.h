// The two residual blocks of upstream's ResNet (resnet.py) and HRNet (hrnet.py), which build them
// identically (only the BN momentum differs, and that comes from the LayerMaker).
//
// state_dict names: conv1, bn1, conv2, bn2 [, conv3, bn3], downsample.0 (1x1 conv), downsample.1 (BN).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "models/layer_maker.h"

namespace seg {

// BasicBlock (expansion 1): relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), with the stride on
// conv1 (3x3) and the shortcut a strided 1x1 conv + BN when shape changes.
class BasicBlock : public UnaryModule {
 public:
  static constexpr int64_t kExpansion = 1;
  // downsample: Sequential(1x1 conv, BN) or null for the identity shortcut.
  BasicBlock(LayerMaker& make, int64_t inplanes, int64_t planes, int64_t stride, std::shared_ptr<Sequential> downsample);
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Sequential> downsample_;
};

// Bottleneck (expansion 4): 1x1 (planes) -> 3x3 with the stride (planes) -> 1x1 (4*planes), BN after
// each, ReLU after the first two and after the residual sum.
class Bottleneck : public UnaryModule {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(LayerMaker& make, int64_t inplanes, int64_t planes, int64_t stride, std::shared_ptr<Sequential> downsample);
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<Sequential> downsample_;
};

// Upstream `_make_layer(block, planes, blocks, stride)`: `blocks` blocks in a Sequential, the first
// with the stride and (when the stride or the channel count changes) a 1x1 conv + BN shortcut.
// `inplanes` is updated to planes * expansion, as upstream's self.inplanes.
template <class Block>
std::shared_ptr<Sequential> make_residual_layer(LayerMaker& make, int64_t& inplanes, int64_t planes, int64_t blocks,
                                                int64_t stride = 1) {
  std::shared_ptr<Sequential> downsample;
  if (stride != 1 || inplanes != planes * Block::kExpansion)
    downsample = std::make_shared<Sequential>(std::vector<std::shared_ptr<UnaryModule>>{
        make.conv(inplanes, planes * Block::kExpansion, 1, stride, 0), make.bn(planes * Block::kExpansion)});
  auto layer = std::make_shared<Sequential>();
  layer->append(std::make_shared<Block>(make, inplanes, planes, stride, downsample));
  inplanes = planes * Block::kExpansion;
  for (int64_t i = 1; i < blocks; ++i) layer->append(std::make_shared<Block>(make, inplanes, planes, 1, nullptr));
  return layer;
}

}  // namespace seg
