// Conv2d and activation modules.
#pragma once

#include "layers/module.h"
#include "layers/ops.h"

namespace seg {

// Upstream nn.Conv2d: parameters "weight" [O, KH, KW, I/groups] (PyTorch OIHW in files) and
// optional "bias" [O]. Created zero-filled; models initialise them (layers/init.h).
class Conv2d : public UnaryModule {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t padding = 0,
         int64_t dilation = 1, int64_t groups = 1, bool bias = false, DType dtype = DType::f32);
  Tensor forward(const Tensor& x) override;

  ops::Conv2dOptions options;
  Tensor weight;
  Tensor bias;  // undefined when the conv has none
  int64_t fan_in() const { return weight.size(1) * weight.size(2) * weight.size(3); }
};

class ReLU : public UnaryModule {
 public:
  explicit ReLU(bool relu6 = false) : relu6_(relu6) {}
  Tensor forward(const Tensor& x) override { return relu6_ ? ops::relu6(x) : ops::relu(x); }
  bool is_relu6() const { return relu6_; }

 private:
  bool relu6_;
};

}  // namespace seg
