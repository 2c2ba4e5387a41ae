// Upstream's ResNet encoders (models.py `Resnet` / `ResnetDilated` around resnet.py's `ResNet`):
// resnet18, resnet50, resnet101 and their dilated versions.
//
// Not torchvision's ResNet: a deep stem of three 3x3 convs,
//   conv1 3x3 s2 (3->64), bn1, relu; conv2 3x3 (64->64), bn2, relu; conv3 3x3 (64->128), bn3, relu;
//   maxpool 3x3 s2 p1
// then layer1..layer4 with 64, 128, 256, 512 planes (strides 1, 2, 2, 2). `inplanes` starts at 128,
// so layer1.0 always has a downsample. BasicBlock [2,2,2,2] for resnet18, Bottleneck [3,4,6,3] for
// resnet50 and [3,4,23,3] for resnet101. The avgpool and fc of the classifier are dropped.
//
// Output: conv_out = [layer1, layer2, layer3, layer4] at strides 4, 8, 16, 32 (each stride-2 step,
// conv or max-pool, gives ceil(H/2)). Dilated (dilate_scale 8, upstream `_nostride_dilate`): layer3
// convs with d=2 and layer4 convs with d=4 lose their stride, so layer3 and layer4 stay at stride 8.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/encoder.h"

namespace seg {

class ResNetEncoder : public Encoder {
 public:
  // depth: 18, 50 or 101. dilated: upstream's ResnetDilated(dilate_scale=8).
  ResNetEncoder(int depth, bool dilated, double bn_momentum);
  std::vector<Tensor> forward(const Tensor& images) override;

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<Sequential> layers_[4];
};

}  // namespace seg
