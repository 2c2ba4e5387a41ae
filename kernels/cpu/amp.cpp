#include "kernels/cpu/amp.h"

#include <cmath>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

namespace {
constexpr int64_t kGrain = 1 << 15;

// OR-reduction of a per-slice flag (the result does not depend on the slicing).
template <class Body>
bool any_slice(int64_t n, Body body) {
  return parallel_reduce(int64_t{0}, n, kGrain, false, body, [](bool a, bool b) { return a || b; });
}
}  // namespace

bool unscale_inplace_check(float* g, int64_t n, float inv_scale) {
  return any_slice(n, [&](int64_t lo, int64_t hi) {
    bool bad = false;
    for (int64_t i = lo; i < hi; ++i) {
      const float v = g[i] * inv_scale;
      g[i] = v;
      bad |= !std::isfinite(v);
    }
    return bad;
  });
}

template <class H>
bool unscale_to_f32_check(const H* g, float* out, int64_t n, float inv_scale) {
  return any_slice(n, [&](int64_t lo, int64_t hi) {
    bool bad = false;
    for (int64_t i = lo; i < hi; ++i) {
      const float v = static_cast<float>(g[i]) * inv_scale;
      out[i] = v;
      bad |= !std::isfinite(v);
    }
    return bad;
  });
}

template <class H>
bool unscale_half_inplace_check(H* g, int64_t n, float inv_scale) {
  return any_slice(n, [&](int64_t lo, int64_t hi) {
    bool bad = false;
    for (int64_t i = lo; i < hi; ++i) {
      const float v = static_cast<float>(g[i]) * inv_scale;
      g[i] = H(v);
      bad |= !std::isfinite(v);
    }
    return bad;
  });
}

template <class H>
void sgd_master_step(float* master, const float* grad, float* buf, H* half_copy, int64_t n, double lr,
                     double momentum, double weight_decay) {
  const float lr_ = static_cast<float>(lr), mom = static_cast<float>(momentum), wd = static_cast<float>(weight_decay);
  parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      // fused multiply-adds, as kernels/cpu/sgd.h (and the CUDA twin, kernels/cuda/amp.cu)
      const float d = std::fma(wd, master[i], grad[i]);
      buf[i] = std::fma(mom, buf[i], d);
      master[i] = std::fma(-lr_, buf[i], master[i]);
      half_copy[i] = H(master[i]);
    }
  });
}

template <class H>
void sgd_half_step(H* p, const H* grad, H* buf, int64_t n, double lr, double momentum, double weight_decay) {
  const float lr_ = static_cast<float>(lr), mom = static_cast<float>(momentum), wd = static_cast<float>(weight_decay);
  parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float pv = static_cast<float>(p[i]);
      const float b = std::fma(wd, pv, std::fma(mom, static_cast<float>(buf[i]), static_cast<float>(grad[i])));
      buf[i] = H(b);
      p[i] = H(std::fma(-lr_, static_cast<float>(buf[i]), pv));
    }
  });
}

Fp16Range fp16_range(const float* g, int64_t n, double scale) {
  Fp16Range r;
  r.total = n;
  const double tiny = std::ldexp(1.0, -25);  // values below 2^-25 round to 0 (2^-25 itself ties to 0)
  for (int64_t i = 0; i < n; ++i) {
    const double v = std::abs(static_cast<double>(g[i])) * scale;
    if (g[i] == 0.0f) ++r.zero;
    else if (v <= tiny) ++r.underflow;
    else if (v >= 65520.0) ++r.overflow;  // rounds to inf
  }
  return r;
}

template bool unscale_to_f32_check<f16>(const f16*, float*, int64_t, float);
template bool unscale_to_f32_check<bf16>(const bf16*, float*, int64_t, float);
template bool unscale_half_inplace_check<f16>(f16*, int64_t, float);
template bool unscale_half_inplace_check<bf16>(bf16*, int64_t, float);
template void sgd_master_step<f16>(float*, const float*, float*, f16*, int64_t, double, double, double);
template void sgd_master_step<bf16>(float*, const float*, float*, bf16*, int64_t, double, double, double);
template void sgd_half_step<f16>(f16*, const f16*, f16*, int64_t, double, double, double);
template void sgd_half_step<bf16>(bf16*, const bf16*, bf16*, int64_t, double, double, double);

}  // namespace seg::cpu
