// LayerMaker: creates the layers of one model (encoder or decoder) and remembers them by kind.
//
// Every Conv2d, BatchNorm2d and Dropout2d of a model is made here, so that
//   * all BatchNorms get the model's momentum (MODEL.bn_momentum; upstream 0.001, HRNet 0.1),
//   * the model can list its BatchNorms (momentum changes, SyncBN reducers, AMP's "BN in fp32") and
//     Dropouts without walking the module tree,
//   * upstream's dilation conversion (`_nostride_dilate`) can be applied to "every conv made while
//     building this stage", exactly as upstream applies it to every conv inside a stage.
// Layers are created zero-filled; models/init.h gives them their initial values.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "layers/batchnorm.h"
#include "layers/conv2d.h"
#include "layers/modules.h"

namespace seg {

class LayerMaker {
 public:
  explicit LayerMaker(double bn_momentum) : bn_momentum_(bn_momentum) {}

  // nn.Conv2d(in, out, kernel, stride, padding, groups=groups, bias=bias), dilation 1.
  std::shared_ptr<Conv2d> conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t padding = 0,
                               int64_t groups = 1, bool bias = false);
  std::shared_ptr<BatchNorm2d> bn(int64_t channels);
  std::shared_ptr<Dropout2d> dropout(double p);
  static std::shared_ptr<ReLU> relu() { return std::make_shared<ReLU>(false); }
  static std::shared_ptr<ReLU> relu6() { return std::make_shared<ReLU>(true); }

  // Upstream models.py `conv3x3_bn_relu(in, out)`: Sequential(0: conv 3x3 s1 p1 no bias, 1: BN, 2: ReLU).
  std::shared_ptr<Sequential> conv3x3_bn_relu(int64_t in, int64_t out);

  // Upstream `_nostride_dilate(m, dilate)` applied to every conv made since conv number `first`:
  // a stride-2 conv becomes stride 1 (a 3x3 one also gets dilation = padding = dilate/2); any other
  // 3x3 conv gets dilation = padding = dilate; 1x1 convs otherwise keep their settings.
  void nostride_dilate(size_t first, int64_t dilate);
  size_t num_convs() const { return convs_.size(); }

  const std::vector<std::shared_ptr<Conv2d>>& convs() const { return convs_; }
  const std::vector<std::shared_ptr<BatchNorm2d>>& batch_norms() const { return bns_; }
  const std::vector<std::shared_ptr<Dropout2d>>& dropouts() const { return dropouts_; }
  double bn_momentum() const { return bn_momentum_; }
  void set_bn_momentum(double m);  // for every BatchNorm made so far and every later one

 private:
  double bn_momentum_;
  std::vector<std::shared_ptr<Conv2d>> convs_;
  std::vector<std::shared_ptr<BatchNorm2d>> bns_;
  std::vector<std::shared_ptr<Dropout2d>> dropouts_;
};

}  // namespace seg
