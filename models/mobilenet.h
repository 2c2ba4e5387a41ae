// Upstream's mobilenetv2dilated encoder (models.py `MobileNetV2Dilated(mobilenetv2, dilate_scale=8)`).
//
// features.0 is conv_bn(3->32, stride 2): Sequential(conv 3x3, BN, ReLU6). features.1..17 are
// InvertedResidual blocks from the table (t expansion, c channels, n repeats, s first stride):
//   [1,16,1,1] [6,24,2,2] [6,32,3,2] [6,64,4,2] [6,96,3,1] [6,160,3,2] [6,320,1,1]
// Each block's `conv` is Sequential(pw 1x1, BN, ReLU6, dw 3x3, BN, ReLU6, pw-linear 1x1, BN), or for
// t = 1 Sequential(dw 3x3, BN, ReLU6, pw-linear 1x1, BN); a residual is added when the block was
// built with stride 1 and equal in/out channels (decided before dilation, as upstream).
// The classifier's last 1x1 conv (320->1280, features.18) is dropped.
//
// Dilation (dilate_scale 8): features 7..13 get dilate 2, features 14..17 dilate 4, so the output
// stays at stride 8. conv_out = the features after blocks 2 (24 ch, /4), 4 (32, /8), 7 (64, /8),
// 14 (160, /8) and after the last block 17 (320, /8); deep supervision reads 160 = fc_dim/2.
#pragma once

#include <memory>
#include <vector>

#include "models/encoder.h"

namespace seg {

class InvertedResidual : public UnaryModule {
 public:
  InvertedResidual(LayerMaker& make, int64_t inp, int64_t oup, int64_t stride, int64_t expand_ratio);
  Tensor forward(const Tensor& x) override;

 private:
  bool use_residual_;
  std::shared_ptr<Sequential> conv_;
};

class MobileNetV2DilatedEncoder : public Encoder {
 public:
  explicit MobileNetV2DilatedEncoder(double bn_momentum);
  std::vector<Tensor> forward(const Tensor& images) override;

 private:
  std::vector<std::shared_ptr<UnaryModule>> blocks_;  // features.0 .. features.17
};

}  // namespace seg
