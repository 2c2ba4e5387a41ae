#include "core/optim.h"

#include <cmath>

#include "core/profiler.h"
#include "kernels/cpu/amp.h"
#include "kernels/cpu/sgd.h"

namespace seg {

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, bool master_weights)
    : groups_(std::move(groups)), lr_(lr), momentum_(momentum), master_weights_(master_weights) {
  size_t n = 0;
  for (const auto& g : groups_) n += g.params.size();
  state_.resize(n);
  size_t i = 0;
  for (const auto& g : groups_)
    for (const Tensor& p : g.params) {
      if (master_weights_ && is_half(p.dtype())) state_[i].master = p.to(DType::f32).clone();
      ++i;
    }
}

bool SGD::unscale_grads(double inv_scale) {
  SEG_PROFILE("unscale_grads", "step", nlohmann::json::object());
  const float inv = static_cast<float>(inv_scale);
  bool found_inf = false;
  size_t i = 0;
  for (const auto& group : groups_) {
    for (const Tensor& p : group.params) {
      ParamState& st = state_[i++];
      st.master_grad_ready = false;
      Tensor g = p.grad();
      if (!g.defined()) continue;
      SEG_CHECK(g.device().is_cpu(), device, "unscale on ", g.device().str(), " is not implemented yet");
      SEG_CHECK(g.is_contiguous(), runtime, "gradient of ", p.name(), " is not contiguous");
      if (st.master.defined()) {
        if (!st.master_grad.defined()) st.master_grad = Tensor::empty(p.shape(), DType::f32);
        SEG_DISPATCH("unscale_grads", g.dtype(), g.device(), (DType::f16, DType::bf16), [&](auto tag) {
          using H = SEG_TYPE(tag);
          found_inf |= cpu::unscale_to_f32_check<H>(g.data<H>(), st.master_grad.data<float>(), g.numel(), inv);
        });
        st.master_grad_ready = true;
      } else {
        SEG_DISPATCH("unscale_grads", g.dtype(), g.device(), (DType::f32, DType::f16, DType::bf16), [&](auto tag) {
          using T = SEG_TYPE(tag);
          if constexpr (std::is_same_v<T, float>) found_inf |= cpu::unscale_inplace_check(g.data<float>(), g.numel(), inv);
          else found_inf |= cpu::unscale_half_inplace_check<T>(g.data<T>(), g.numel(), inv);
        });
      }
    }
  }
  return found_inf;
}

void SGD::step() {
  SEG_PROFILE("sgd", "step", {{"master_weights", master_weights_}});
  size_t i = 0;
  for (const auto& group : groups_) {
    for (const Tensor& p_const : group.params) {
      Tensor p = p_const;
      ParamState& st = state_[i++];
      const Tensor& g = p.grad();
      if (!g.defined()) continue;
      SEG_CHECK(p.device().is_cpu(), device, "SGD step on ", p.device().str(), " is not implemented yet");
      SEG_CHECK(p.is_contiguous() && g.is_contiguous(), runtime, "SGD: parameter ", p.name(), " is not contiguous");
      if (st.master.defined()) {
        // fp32 update of the master copy; the half parameter is rewritten from it in the same pass.
        if (!st.master_grad_ready) {
          if (!st.master_grad.defined()) st.master_grad = Tensor::empty(p.shape(), DType::f32);
          st.master_grad.copy_(g);
        }
        if (!st.momentum.defined()) st.momentum = Tensor::zeros(p.shape(), DType::f32);
        SEG_DISPATCH("sgd_step", p.dtype(), p.device(), (DType::f16, DType::bf16), [&](auto tag) {
          using H = SEG_TYPE(tag);
          cpu::sgd_master_step<H>(st.master.data<float>(), st.master_grad.data<float>(), st.momentum.data<float>(),
                                  p.data<H>(), p.numel(), lr_, momentum_, group.weight_decay);
        });
        st.master_grad_ready = false;
        continue;
      }
      if (!st.momentum.defined()) st.momentum = Tensor::zeros(p.shape(), p.dtype(), p.device());
      SEG_DISPATCH("sgd_step", p.dtype(), p.device(), (DType::f32, DType::f64, DType::f16, DType::bf16), [&](auto tag) {
        using T = SEG_TYPE(tag);
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
          cpu::sgd_momentum_step<T>(p.data<T>(), g.data<T>(), st.momentum.data<T>(), p.numel(), lr_, momentum_,
                                    group.weight_decay);
        else
          cpu::sgd_half_step<T>(p.data<T>(), g.data<T>(), st.momentum.data<T>(), p.numel(), lr_, momentum_,
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
