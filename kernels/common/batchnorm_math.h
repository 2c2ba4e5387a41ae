// BatchNorm's per-channel formulas, shared by the CPU and CUDA kernels (kernels/{cpu,cuda}/batchnorm.h)
// so that both backends finalize statistics and backward coefficients with the same operations.
//
// Finalize (PyTorch's F.batch_norm, DESIGN decision 12), from the moments of M values per channel:
//   train: var = M2/M (biased, to normalise), invstd = 1/sqrt(var + eps),
//          running_mean = (1-m)*running_mean + m*mean,
//          running_var  = (1-m)*running_var  + m*var*M/(M-1)     (unbiased)
//   eval : mean = running_mean, invstd = 1/sqrt(running_var + eps); running statistics unchanged
//   both : scale = gamma*invstd (what the apply kernel multiplies by)
// Backward coefficients, dx = k1*dy + k2*(x - mean) + k3, from the sums of dy and dy*xhat:
//   train: k1 = gamma*invstd, k2 = -k1*invstd*sum_dy_xhat/M, k3 = -k1*sum_dy/M
//   eval : k1 = gamma*invstd, k2 = k3 = 0
// Statistics and sums are double; A (float, or double for double tensors) is the parameter type.
//
// The activation a fused BN+ReLU / BN+ReLU6 applies after the affine transform, with PyTorch's
// semantics: relu(v) = v < 0 ? 0 : v and relu6(v) = min(relu(v), 6), NaN passing through; the
// gradient passes where 0 < y (and y < 6), y being the activation's output, which is the same test
// as on its input (y is 0 or 6 exactly where the input is outside, and NaN where it is NaN).
#pragma once

#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "kernels/common/half.h"
#include "kernels/common/hostdevice.h"

namespace seg {

enum class BnActivation : int { none = 0, relu = 1, relu6 = 2 };

template <class F> SEG_HD_INLINE F bn_activate(F v, BnActivation act) {
  if (act == BnActivation::none) return v;
  const F r = v < F(0) ? F(0) : v;  // NaN < 0 is false: NaN stays
  return act == BnActivation::relu6 && F(6) < r ? F(6) : r;
}

template <class F> SEG_HD_INLINE bool bn_activation_passes(F y, BnActivation act) {
  if (act == BnActivation::none) return true;
  if (act == BnActivation::relu) return y > F(0);
  return (y > F(0)) & (y < F(6));
}

// The affine step of the apply pass, v = (x - mean)*scale + beta in the compute type F: one
// expression for the forward and for the fused backward's recomputation (below), so that both
// round it the same way (the same operations in the same order; a contraction into an FMA applies
// to both alike).
template <class F, class A> SEG_HD_INLINE F bn_affine(F x, A mean, A scale, A beta) {
  return static_cast<F>((x - mean) * scale + beta);
}

// The fused backward's mask without reading y. The forward stores y = round_T(act(v)); whether the
// activation's gradient passes at y (0 < y, and y < 6 for ReLU6) is a comparison of v itself with
// two bounds, because rounding to the storage type T is monotone and keeps 0 and 6:
//   passes(y)  <=>  lo < v  (and v < hi for ReLU6)
// lo: the largest value that rounds to 0 in T, hi: the smallest that rounds to 6. In f32 and f64
// (no rounding) they are 0 and 6; in f16 half the smallest subnormal (2^-25, a tie, rounds to the
// even 0) and 6 - half an ulp of 6 (6 - 2^-9, a tie that rounds to the even 6); in bf16 2^-134 and
// 6 - 2^-6 likewise. NaN fails both tests, as it fails passes(y). tests/kernels/test_batchnorm_mask.cpp
// checks the equivalence on every float around each bound and on random values.
// So the fused backward reads x and dy only, not y: one tensor fewer in each of its two passes.
struct BnPassBounds {
  float lo, hi;
};
template <class T> SEG_HD_INLINE BnPassBounds bn_pass_bounds() {
  if constexpr (std::is_same_v<T, bf16>) return {0x1p-134f, 6.0f - 0x1p-6f};
  else if constexpr (std::is_same_v<T, f16>) return {0x1p-25f, 6.0f - 0x1p-9f};
  else return {0.0f, 6.0f};
}
template <class F> SEG_HD_INLINE bool bn_activation_passes_at(F v, BnPassBounds b, BnActivation act) {
  if (act == BnActivation::none) return true;
  if (act == BnActivation::relu) return v > F(b.lo);
  return (v > F(b.lo)) & (v < F(b.hi));
}

template <class A>
SEG_HD_INLINE void bn_finalize_channel(double mu, double m2, double M, bool training, double momentum, double eps,
                                       A gamma, A& running_mean, A& running_var, A& mean, A& invstd, A& scale) {
  if (training) {
    const double var = m2 / M;
    mean = static_cast<A>(mu);
    invstd = static_cast<A>(1.0 / sqrt(var + eps));
    running_mean = static_cast<A>((1.0 - momentum) * running_mean + momentum * mu);
    running_var = static_cast<A>((1.0 - momentum) * running_var + momentum * var * M / (M - 1.0));
  } else {
    mean = running_mean;
    invstd = static_cast<A>(1.0 / sqrt(static_cast<double>(running_var) + eps));
  }
  scale = gamma * invstd;
}

// SyncBN's two steps per channel (kernels/cpu/batchnorm.h, bn_sync_first / bn_sync_second): the
// local mean as a sum, then, with the global sum and count M, the local M2 re-centred on the
// global mean (Chan's formula, one rank at a time) and the mean replaced by the global one.
SEG_HD_INLINE double bn_sync_first_channel(double mean, int64_t P) { return mean * static_cast<double>(P); }
SEG_HD_INLINE void bn_sync_second_channel(double sum, double M, int64_t P, double& mean, double& m2) {
  const double global = sum / M, d = mean - global;
  m2 = m2 + static_cast<double>(P) * d * d;
  mean = global;
}

template <class A>
SEG_HD_INLINE void bn_backward_coefficients_channel(double sum_dy, double sum_dy_xhat, double M, bool training,
                                                    A gamma, A invstd, A& k1, A& k2, A& k3) {
  k1 = gamma * invstd;
  if (training) {
    k2 = static_cast<A>(-static_cast<double>(k1) * invstd * sum_dy_xhat / M);
    k3 = static_cast<A>(-static_cast<double>(k1) * sum_dy / M);
  } else {
    k2 = A(0);
    k3 = A(0);
  }
}

}  // namespace seg
