#include "core/optim.h"

#include <cmath>

#include "kernels/cpu/sgd.h"

namespace seg {

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum)
    : groups_(std::move(groups)), lr_(lr), momentum_(momentum) {
  size_t n = 0;
  for (const auto& g : groups_) n += g.params.size();
  buffers_.resize(n);
}

void SGD::step() {
  size_t index = 0;
  for (const auto& group : groups_) {
    for (const Tensor& p_const : group.params) {
      Tensor p = p_const;
      Tensor& buf = buffers_[index++];
      const Tensor& g = p.grad();
      if (!g.defined()) continue;
      SEG_CHECK(p.device().is_cpu(), device, "SGD step on ", p.device().str(), " is not implemented yet");
      SEG_CHECK(p.is_contiguous() && g.is_contiguous(), runtime, "SGD: parameter ", p.name(), " is not contiguous");
      if (!buf.defined()) buf = Tensor::zeros(p.shape(), p.dtype(), p.device());
      SEG_DISPATCH("sgd_step", p.dtype(), p.device(), (DType::f32, DType::f64), [&](auto tag) {
        using T = SEG_TYPE(tag);
        cpu::sgd_momentum_step<T>(p.data<T>(), g.data<T>(), buf.data<T>(), p.numel(), lr_, momentum_,
                                  group.weight_decay);
      });
    }
  }
}

void SGD::zero_grad() {
  for (auto& group : groups_)
    for (Tensor& p : group.params) p.zero_grad();
}

double poly_lr(double base_lr, long iter, long max_iters, double power) {
  const double progress = max_iters > 0 ? static_cast<double>(iter) / static_cast<double>(max_iters) : 0.0;
  return base_lr * std::pow(1.0 - progress, power);
}

}  // namespace seg
