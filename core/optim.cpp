#include "core/optim.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/profiler.h"
#include "kernels/cpu/amp.h"
#include "kernels/cpu/copy.h"
#include "kernels/cpu/sgd.h"
#ifdef SEG_WITH_CUDA
#include "kernels/cuda/amp.h"
#include "kernels/cuda/sgd.h"
#endif

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

void SGD::unscale_grads(double inv_scale, Tensor& found_inf) {
  SEG_PROFILE("unscale_grads", "step", nlohmann::json::object());
  const float inv = static_cast<float>(inv_scale);
  SEG_CHECK(found_inf.defined() && found_inf.dtype() == DType::i32 && found_inf.numel() == 1, runtime,
            "unscale_grads: found_inf must be one i32, got ", found_inf.str());
  // The CPU kernels return the flag; the CUDA ones OR it into device memory (no read-back).
  auto flag = [&](bool inf) {
    if (inf) found_inf.data<int32_t>()[0] = 1;
  };
  size_t i = 0;
  for (const auto& group : groups_) {
    for (const Tensor& p : group.params) {
      ParamState& st = state_[i++];
      st.master_grad_ready = false;
      Tensor g = p.grad();
      if (!g.defined()) continue;
      check_same_device("unscale_grads", {&p, &g, &found_inf});
      SEG_CHECK(g.is_contiguous(), runtime, "gradient of ", p.name(), " is not contiguous");
      [[maybe_unused]] int32_t* inf_ptr = found_inf.data<int32_t>();
      if (st.master.defined()) {
        if (!st.master_grad.defined()) st.master_grad = p.new_empty(p.shape(), DType::f32);
        SEG_DISPATCH_DEVICE("unscale_grads", g, (DType::f16, DType::bf16), (DType::f16, DType::bf16), [&](auto dev, auto tag) {
          using H = SEG_TYPE(tag);
          SEG_CUDA_ONLY(if constexpr (on_cuda(dev)) {
            SEG_CUDA_KERNEL(dev, unscale_to_f32_check<H>)(g.data<H>(), st.master_grad.data<float>(), g.numel(), inv, inf_ptr);
          } else)
          {
            flag(SEG_KERNEL(dev, unscale_to_f32_check<H>)(g.data<H>(), st.master_grad.data<float>(), g.numel(), inv));
          }
        });
        st.master_grad_ready = true;
      } else {
        SEG_DISPATCH_DEVICE("unscale_grads", g, (DType::f32, DType::f16, DType::bf16), (DType::f32, DType::f16, DType::bf16),
                            [&](auto dev, auto tag) {
          using T = SEG_TYPE(tag);
          SEG_CUDA_ONLY(if constexpr (on_cuda(dev)) {
            if constexpr (std::is_same_v<T, float>) SEG_CUDA_KERNEL(dev, unscale_inplace_check)(g.data<float>(), g.numel(), inv, inf_ptr);
            else SEG_CUDA_KERNEL(dev, unscale_half_inplace_check<T>)(g.data<T>(), g.numel(), inv, inf_ptr);
          } else)
          {
            if constexpr (std::is_same_v<T, float>) flag(SEG_KERNEL(dev, unscale_inplace_check)(g.data<float>(), g.numel(), inv));
            else flag(SEG_KERNEL(dev, unscale_half_inplace_check<T>)(g.data<T>(), g.numel(), inv));
          }
        });
      }
    }
  }
}

bool SGD::unscale_grads(double inv_scale) {
  Tensor found_inf = Tensor::zeros({1}, DType::i32, device());
  unscale_grads(inv_scale, found_inf);
  return found_inf.item() != 0;
}

Device SGD::device() const {
  for (const auto& g : groups_)
    if (!g.params.empty()) return g.params.front().device();
  return Device::cpu();
}

void SGD::to(Device device) {
  for (ParamState& st : state_)
    for (Tensor* t : {&st.momentum, &st.master, &st.master_grad})
      if (t->defined()) t->move_to_(device);
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
      check_same_device("sgd_step", {&p, &g});
      SEG_CHECK(p.is_contiguous() && g.is_contiguous(), runtime, "SGD: parameter ", p.name(), " is not contiguous");
      if (st.master.defined()) {
        // fp32 update of the master copy; the half parameter is rewritten from it in the same pass.
        if (!st.master_grad_ready) {
          if (!st.master_grad.defined()) st.master_grad = p.new_empty(p.shape(), DType::f32);
          st.master_grad.copy_(g);
        }
        if (!st.momentum.defined()) st.momentum = p.new_zeros(p.shape(), DType::f32);
        SEG_DISPATCH_DEVICE("sgd_step", p, (DType::f16, DType::bf16), (DType::f16, DType::bf16), [&](auto dev, auto tag) {
          using H = SEG_TYPE(tag);
          SEG_KERNEL(dev, sgd_master_step<H>)(st.master.data<float>(), st.master_grad.data<float>(), st.momentum.data<float>(),
                                  p.data<H>(), p.numel(), lr_, momentum_, group.weight_decay);
        });
        st.master_grad_ready = false;
        continue;
      }
      if (!st.momentum.defined()) st.momentum = p.new_zeros(p.shape());
      SEG_DISPATCH_DEVICE("sgd_step", p, SEG_CPU_FLOAT_DTYPES, SEG_CUDA_FLOAT_DTYPES, [&](auto dev, auto tag) {
        using T = SEG_TYPE(tag);
        if constexpr (!cpu::is_half16<T>::value)
          SEG_KERNEL(dev, sgd_momentum_step<T>)(p.data<T>(), g.data<T>(), st.momentum.data<T>(), p.numel(), lr_, momentum_,
                                    group.weight_decay);
        else
          SEG_KERNEL(dev, sgd_half_step<T>)(p.data<T>(), g.data<T>(), st.momentum.data<T>(), p.numel(), lr_, momentum_,
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
