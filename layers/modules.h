// Parameter-free modules and containers, so model code can mirror upstream's nn.Sequential and
// nn.ModuleList indices exactly: upstream PPM's `ppm.i = Sequential(AdaptiveAvgPool2d, Conv, BN, ReLU)`
// names its conv "ppm.i.1", which only comes out right if the pooling occupies index 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "layers/module.h"
#include "layers/ops.h"

namespace seg {

// nn.AdaptiveAvgPool2d(size): [N,H,W,C] -> [N,size,size,C].
class AdaptiveAvgPool2d : public UnaryModule {
 public:
  explicit AdaptiveAvgPool2d(int64_t output_size) : output_size(output_size) {}
  Tensor forward(const Tensor& x) override { return ops::adaptive_avg_pool2d(x, output_size, output_size); }
  int64_t output_size;
};

// nn.MaxPool2d(kernel, stride, padding) with PyTorch's floor rule (ceil_mode=False).
class MaxPool2d : public UnaryModule {
 public:
  MaxPool2d(int64_t kernel, int64_t stride, int64_t padding) : kernel(kernel), stride(stride), padding(padding) {}
  Tensor forward(const Tensor& x) override { return ops::max_pool2d(x, kernel, stride, padding); }
  int64_t kernel, stride, padding;
};

// nn.Dropout2d(p): drops whole channels in train mode, identity in eval mode.
class Dropout2d : public UnaryModule {
 public:
  explicit Dropout2d(double p) : p(p) {}
  Tensor forward(const Tensor& x) override { return ops::dropout2d(x, p, is_training()); }
  double p;
};

// nn.ModuleList: children named "0", "1", ... A null entry is upstream's `None` placeholder (HRNet's
// transition and fuse lists): it takes an index but registers nothing, so later names keep their
// upstream positions.
template <class M>
class ModuleList : public Module {
 public:
  void append(std::shared_ptr<M> m) {
    if (m) register_module(std::to_string(items_.size()), m);
    items_.push_back(std::move(m));
  }
  size_t size() const { return items_.size(); }
  const std::shared_ptr<M>& operator[](size_t i) const { return items_.at(i); }

 private:
  std::vector<std::shared_ptr<M>> items_;
};

}  // namespace seg
