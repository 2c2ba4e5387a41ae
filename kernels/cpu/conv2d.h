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
// Implementations (the dispatcher below picks one per layer and pass):
//  * *_ref: the naive 7-deep loop nest in double accumulation: the specification, used by tests.
//  * direct: the same sums reorganised so the innermost loop runs over contiguous channels of both x
//    and w (vectorisable), parallel over output rows (forward), input rows (backward data, a gather so
//    no two threads write the same element) and fixed pixel chunks x output-channel blocks (backward
//    weight: outer products, chunk partials added in a fixed order). Deterministic for any thread
//    count. The automatic choice for backward weight of layers with <= 4 input channels (RGB input).
//    Memory traffic (direct forward): x is read KH*KW times from cache per output row, w once per row.
//  * gemm: implicit GEMM (kernels/cpu/conv2d_gemm.cpp), the general fast path.
//  * depthwise: vector loops over channels (kernels/cpu/conv2d_depthwise.cpp).
//  * winograd: F(m x m, 3 x 3) for 3x3 stride-1 dense layers, float32 (kernels/cpu/conv2d_winograd.h).
#pragma once

#include <cstdint>
#include <vector>

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
// The weights [C, KH, KW, 1] reordered to wt[tap][c] (contiguous in c, as the channel loops read them).
template <class T> std::vector<T> depthwise_weights_by_tap(const ConvShape& s, const T* w);
template <class T> void conv2d_forward_depthwise(const ConvShape& s, const T* x, const T* w, const T* b, T* y);
template <class T> void conv2d_backward_data_depthwise(const ConvShape& s, const T* w, const T* dy, T* dx);
template <class T>
void conv2d_backward_weight_depthwise(const ConvShape& s, const T* x, const T* dy, T* dw, T* db);

// Which implementation conv2d uses. `automatic` picks depthwise, Winograd, implicit GEMM or (for
// the weight gradient of a layer with <= 4 input channels) direct per layer and pass
// (kernels/cpu/conv2d_dispatch.cpp has the rules and the measurements behind them); the others
// force one path (tests, benchmarks): winograd2/4/6 = F(2x2/4x4/6x6, 3x3), `winograd` = the
// Winograd tile the automatic rules would use where they use one, else F(2x2), `no_winograd` = the
// automatic choice with Winograd taken out (depthwise layers keep their kernel, the 3x3 layers
// Winograd would take run the implicit GEMM: the "without Winograd" arm of a training comparison).
// A forced path that cannot run a shape (depthwise on a dense conv, Winograd on a strided one)
// falls back to automatic. Float64 never runs Winograd (its float64 runs are references: gradient
// checks, golden runs), and runs the same index logic as float32 otherwise. Set through
// set_conv_algo() or SEG_CONV_ALGO
// (direct|gemm|depthwise|winograd|winograd2|winograd4|winograd6|no-winograd|auto).
enum class ConvAlgo { automatic, direct, gemm, depthwise, winograd, winograd2, winograd4, winograd6, no_winograd };
ConvAlgo conv_algo();
void set_conv_algo(ConvAlgo algo);

enum class ConvPass { forward, backward_data, backward_weight };
// What the entry points below run for this shape, pass and element type (float32 when f32, else
// float64), with the current override applied: never `automatic`, `winograd` or `no_winograd`.
ConvAlgo conv_algo_chosen(const ConvShape& s, ConvPass pass, bool f32);
const char* conv_algo_name(ConvAlgo algo);  // "gemm", "winograd4", ... (the SEG_CONV_ALGO spelling)
const char* conv_pass_name(ConvPass pass);  // "forward", "backward data", "backward weight"

// What the entry points below ran, one entry per distinct (shape, pass, element type), in the order
// of their first call, while recording is on (`segtrain bench --verbose` prints it). Off by default:
// then the entry points only test one atomic flag.
struct ConvChoice {
  ConvShape shape;
  ConvPass pass;
  bool f32;
  ConvAlgo algo;
  int64_t calls;
};
void set_conv_choice_recording(bool on);  // on: also clears what was recorded
std::vector<ConvChoice> conv_choices();

// The entry points the conv op calls (T = float or double): the one place that picks the algorithm.
template <class T> void conv2d_forward(const ConvShape& s, const T* x, const T* w, const T* b, T* y);
template <class T> void conv2d_backward_data(const ConvShape& s, const T* w, const T* dy, T* dx);
template <class T> void conv2d_backward_weight(const ConvShape& s, const T* x, const T* dy, T* dw, T* db);

// Direct (vectorised, threaded) versions.
template <class T> void conv2d_forward_direct(const ConvShape& s, const T* x, const T* w, const T* b, T* y);
template <class T> void conv2d_backward_data_direct(const ConvShape& s, const T* w, const T* dy, T* dx);
template <class T> void conv2d_backward_weight_direct(const ConvShape& s, const T* x, const T* dy, T* dw, T* db);

}  // namespace seg::cpu
