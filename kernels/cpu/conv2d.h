// 2-D convolution on channels-last tensors (DESIGN decision 1).
//
//   x  [N, H,  W,  C]            input
//   w  [O, KH, KW, C/groups]     weights (one internal layout for every backend)
//   b  [O]                       optional bias
//   y  [N, Ho, Wo, O]            output
//
//   Ho = (H + 2*pad_h - dil_h*(KH-1) - 1) / stride_h + 1     (floor, as PyTorch)
//   y[n,ho,wo,o] = b[o] + sum_{kh,kw,c} x[n, ho*s_h - p_h + kh*d_h, wo*s_w - p_w + kw*d_w, g*Cg + c] * w[o,kh,kw,c]
//   with g = o / (O/groups), Cg = C/groups, out-of-range input positions reading 0.
//
// Two implementations:
//  * *_ref: the naive 7-deep loop nest in double accumulation: the specification, used by tests.
//  * direct: the same sums reorganised so the innermost loop runs over contiguous channels of both x
//    and w (vectorisable), parallel over output rows (forward), input rows (backward data, a gather so
//    no two threads write the same element) and output channels (backward weight). Deterministic.
// Memory traffic (direct forward): x is read KH*KW times from cache per output row, w once per row.
#pragma once

#include <cstdint>

#include "kernels/common/conv_shape.h"

namespace seg::cpu {

using ::seg::ConvShape;  // kernels/common/conv_shape.h

// The window arithmetic every fast kernel shares (the reference spells it out on its own).
// Taps of output pixel (ho, wo) that fall inside the input: fn(kh, kw, h, w).
template <class F>
inline void for_each_input_tap(const ConvShape& s, int64_t ho, int64_t wo, F&& fn) {
  for (int64_t kh = 0; kh < s.KH; ++kh) {
    const int64_t h = ho * s.stride_h - s.pad_h + kh * s.dil_h;
    if (h < 0 || h >= s.H) continue;
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      const int64_t w = wo * s.stride_w - s.pad_w + kw * s.dil_w;
      if (w < 0 || w >= s.W) continue;
      fn(kh, kw, h, w);
    }
  }
}
// Output pixels whose window reads input pixel (h, w), and through which tap: fn(kh, kw, ho, wo).
// (h = ho*stride - pad + kh*dil, so ho = (h + pad - kh*dil) / stride when that divides exactly.)
template <class F>
inline void for_each_output_reading(const ConvShape& s, int64_t h, int64_t w, F&& fn) {
  const int64_t Ho = s.Ho(), Wo = s.Wo();
  for (int64_t kh = 0; kh < s.KH; ++kh) {
    const int64_t hn = h + s.pad_h - kh * s.dil_h;
    if (hn < 0 || hn % s.stride_h) continue;
    const int64_t ho = hn / s.stride_h;
    if (ho >= Ho) continue;
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      const int64_t wn = w + s.pad_w - kw * s.dil_w;
      if (wn < 0 || wn % s.stride_w) continue;
      const int64_t wo = wn / s.stride_w;
      if (wo >= Wo) continue;
      fn(kh, kw, ho, wo);
    }
  }
}

// Reference (naive) versions. T = float or double.
template <class T> void conv2d_forward_ref(const ConvShape& s, const T* x, const T* w, const T* b, T* y);
// Any of dx, dw, db may be null (not needed). Outputs are overwritten.
template <class T>
void conv2d_backward_ref(const ConvShape& s, const T* x, const T* w, const T* dy, T* dx, T* dw, T* db);

// Implicit-GEMM versions (kernels/cpu/conv2d_gemm.cpp): the fast path for dense and grouped
// convolutions. T = float (SIMD GEMM) or double (the same packers, a plain double GEMM). Outputs are
// overwritten.
template <class T> void conv2d_forward_gemm(const ConvShape& s, const T* x, const T* w, const T* b, T* y);
template <class T> void conv2d_backward_data_gemm(const ConvShape& s, const T* w, const T* dy, T* dx);
template <class T> void conv2d_backward_weight_gemm(const ConvShape& s, const T* x, const T* dy, T* dw, T* db);

// Depthwise versions (groups == C == O; kernels/cpu/conv2d_depthwise.cpp), T = float or double.
bool conv2d_is_depthwise(const ConvShape& s);
template <class T> void conv2d_forward_depthwise(const ConvShape& s, const T* x, const T* w, const T* b, T* y);
template <class T> void conv2d_backward_data_depthwise(const ConvShape& s, const T* w, const T* dy, T* dx);
template <class T>
void conv2d_backward_weight_depthwise(const ConvShape& s, const T* x, const T* dy, T* dw, T* db);

// Which implementation conv2d uses, for float32 and float64 alike (so the float64 gradient checks and
// golden runs exercise the production index logic). `automatic` picks depthwise or GEMM by shape;
// the others force one path (tests, benchmarks). Set through set_conv_algo() or the environment
// variable SEG_CONV_ALGO.
enum class ConvAlgo { automatic, direct, gemm, depthwise };
ConvAlgo conv_algo();
void set_conv_algo(ConvAlgo algo);

// The entry points the conv op calls (T = float or double): the one place that picks the algorithm.
template <class T> void conv2d_forward(const ConvShape& s, const T* x, const T* w, const T* b, T* y);
template <class T> void conv2d_backward_data(const ConvShape& s, const T* w, const T* dy, T* dx);
template <class T> void conv2d_backward_weight(const ConvShape& s, const T* x, const T* dy, T* dw, T* db);

// Direct (vectorised, threaded) versions.
template <class T> void conv2d_forward_direct(const ConvShape& s, const T* x, const T* w, const T* b, T* y);
template <class T> void conv2d_backward_data_direct(const ConvShape& s, const T* w, const T* dy, T* dx);
template <class T> void conv2d_backward_weight_direct(const ConvShape& s, const T* x, const T* dy, T* dw, T* db);

}  // namespace seg::cpu
