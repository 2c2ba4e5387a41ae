// Depthwise convolution (groups == C == O, one filter per channel), float32 (and float64, the same
// loops, for gradient checks and the float64 golden runs): MobileNetV2's 3x3 convs
// (stride 1 or 2, dilation 1, 2 or 4 after upstream's dilation conversion).
//
//   y[n,ho,wo,c] = b[c] + sum_{kh,kw} x[n, ho*s-p+kh*d, wo*s-p+kw*d, c] * w[c, kh, kw]
//
// GEMM does not fit (one input channel per output channel); instead every loop runs over the
// contiguous channel dimension, so each tap is one vector multiply-add over C channels. The weights
// are transposed once per call to wt[tap][c] so that they are contiguous in c as well.
// Memory traffic: forward reads each input pixel KH*KW times (from cache) and writes y once; it is
// memory-bound, like on the GPU (see notes on depthwise convolution). What made it faster was
// keeping the sums in registers across the taps (a block of output pixels x 16 channels forward,
// 8 channels x 9 taps backward weight), not wider vectors: `build/bin/lab_conv` times each pass
// against the plain v1 loops (docs/performance.md, "Early convolutions").
#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

template <class T>
std::vector<T> depthwise_weights_by_tap(const ConvShape& s, const T* w) {
  const int64_t taps = s.KH * s.KW;
  std::vector<T> wt(static_cast<size_t>(taps * s.C));
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t t = 0; t < taps; ++t) wt[t * s.C + c] = w[c * taps + t];
  return wt;
}

bool conv2d_is_depthwise(const ConvShape& s) { return s.groups == s.C && s.O == s.C && s.groups > 1; }

// The float32 forward's inner block: kPixels consecutive output pixels of one row x 16 channels,
// accumulated in registers over every tap (8 ymm accumulators), so each weight vector is loaded once
// per kPixels pixels and the output is written once, instead of one load/add/store of the output
// per tap and pixel. Only for pixels whose taps all lie inside the row (the interior); the borders
// take the plain loop. The taps are summed in for_each_input_tap's order, as in the plain loop.
// (8-float GCC vectors: the x86-64-v3 baseline, AVX2 + FMA; depthwise is memory-bound, so AVX-512
// would not add much.)
namespace {
// Unaligned 8-float loads and stores that may alias the float arrays they read (as _mm256_loadu_ps).
typedef float v8 __attribute__((vector_size(32), aligned(4), may_alias));
constexpr int64_t kPixels = 4;

struct RowWindow {
  int64_t wo_lo, wo_hi;  // interior output columns [wo_lo, wo_hi): every tap inside 0..W-1
};
RowWindow interior_columns(const ConvShape& s) {
  const int64_t Wo = s.Wo();
  const int64_t lo = std::min(Wo, (s.pad_w + s.stride_w - 1) / s.stride_w);
  const int64_t last = s.W - 1 + s.pad_w - (s.KW - 1) * s.dil_w;  // wo*stride must not pass it
  const int64_t hi = last < 0 ? 0 : std::min(Wo, last / s.stride_w + 1);
  return {lo, std::max(lo, hi)};
}

// y[r, wo .. wo+kPixels) for channels [c, c+16), row r = (n, ho), all taps inside the row.
void forward_block(const ConvShape& s, int64_t n, int64_t ho, int64_t wo, int64_t c, const float* x,
                   const float* wt, const float* b, float* y_row) {
  v8 acc[kPixels][2];
  const v8 b0 = b ? *reinterpret_cast<const v8*>(b + c) : v8{}, b1 = b ? *reinterpret_cast<const v8*>(b + c + 8) : v8{};
  for (int64_t j = 0; j < kPixels; ++j) acc[j][0] = b0, acc[j][1] = b1;
  for (int64_t kh = 0; kh < s.KH; ++kh) {
    const int64_t h = ho * s.stride_h - s.pad_h + kh * s.dil_h;
    if (h < 0 || h >= s.H) continue;
    const float* x_row = x + (n * s.H + h) * s.W * s.C + c;
    for (int64_t kw = 0; kw < s.KW; ++kw) {
      const float* k = wt + (kh * s.KW + kw) * s.C + c;
      const v8 k0 = *reinterpret_cast<const v8*>(k), k1 = *reinterpret_cast<const v8*>(k + 8);
      const float* in = x_row + (wo * s.stride_w - s.pad_w + kw * s.dil_w) * s.C;
      for (int64_t j = 0; j < kPixels; ++j, in += s.stride_w * s.C) {
        acc[j][0] += *reinterpret_cast<const v8*>(in) * k0;
        acc[j][1] += *reinterpret_cast<const v8*>(in + 8) * k1;
      }
    }
  }
  for (int64_t j = 0; j < kPixels; ++j) {
    *reinterpret_cast<v8*>(y_row + (wo + j) * s.C + c) = acc[j][0];
    *reinterpret_cast<v8*>(y_row + (wo + j) * s.C + c + 8) = acc[j][1];
  }
}
}  // namespace

template <class T>
void conv2d_forward_depthwise(const ConvShape& s, const T* x, const T* w, const T* b, T* y) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C;
  const std::vector<T> wt = depthwise_weights_by_tap(s, w);
  // One output pixel, channels [c0, C), by the plain loop.
  auto pixel = [&](int64_t n, int64_t ho, int64_t wo, int64_t c0, T* out) {
    if (b) std::copy(b + c0, b + C, out + c0);
    else std::fill(out + c0, out + C, T(0));
    for_each_input_tap(s, ho, wo, [&](int64_t kh, int64_t kw, int64_t h, int64_t wi) {
      const T* in = x + ((n * s.H + h) * s.W + wi) * C;
      const T* k = wt.data() + (kh * s.KW + kw) * C;
      for (int64_t c = c0; c < C; ++c) out[c] += in[c] * k[c];
    });
  };
  const RowWindow inner = interior_columns(s);
  const int64_t C16 = std::is_same_v<T, float> ? C / 16 * 16 : 0;  // channels the float block covers
  parallel_for(0, s.N * Ho, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / Ho, ho = r % Ho;
      T* y_row = y + r * Wo * C;
      int64_t wo = 0;
      if constexpr (std::is_same_v<T, float>) {
        for (; wo < inner.wo_lo; ++wo) pixel(n, ho, wo, 0, y_row + wo * C);
        for (; wo + kPixels <= inner.wo_hi; wo += kPixels) {
          for (int64_t c = 0; c < C16; c += 16) forward_block(s, n, ho, wo, c, x, wt.data(), b, y_row);
          if (C16 < C)
            for (int64_t j = 0; j < kPixels; ++j) pixel(n, ho, wo + j, C16, y_row + (wo + j) * C);
        }
      }
      for (; wo < Wo; ++wo) pixel(n, ho, wo, 0, y_row + wo * C);
    }
  });
}

// Backward data. With stride 1 it is itself a depthwise convolution, of dy with the taps flipped:
//   dx[h, w] = sum_{kh,kw} dy[h + p - kh*d, w + p - kw*d] * w[kh, kw]
//            = sum_{kh',kw'} dy[h - p' + kh'*d, w - p' + kw'*d] * w[K-1-kh', K-1-kw'],  p' = d*(K-1) - p
// so it runs on the forward's register-blocked loop (the output size comes back to H x W). Strided
// layers (and a padding wider than the dilated kernel, p' < 0) gather per input pixel instead.
template <class T>
void conv2d_backward_data_depthwise(const ConvShape& s, const T* w, const T* dy, T* dx) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C;
  ConvShape flipped = s;
  flipped.H = Ho, flipped.W = Wo;
  flipped.pad_h = s.dil_h * (s.KH - 1) - s.pad_h, flipped.pad_w = s.dil_w * (s.KW - 1) - s.pad_w;
  if (s.stride_h == 1 && s.stride_w == 1 && flipped.pad_h >= 0 && flipped.pad_w >= 0) {
    const int64_t taps = s.KH * s.KW;
    std::vector<T> wf(static_cast<size_t>(taps * C));
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < taps; ++t) wf[c * taps + t] = w[c * taps + (taps - 1 - t)];
    return conv2d_forward_depthwise(flipped, dy, wf.data(), static_cast<const T*>(nullptr), dx);
  }
  const std::vector<T> wt = depthwise_weights_by_tap(s, w);
  parallel_for(0, s.N * s.H, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / s.H, h = r % s.H;
      for (int64_t wi = 0; wi < s.W; ++wi) {
        T* out = dx + (r * s.W + wi) * C;
        std::fill(out, out + C, T(0));
        for_each_output_reading(s, h, wi, [&](int64_t kh, int64_t kw, int64_t ho, int64_t wo) {
          const T* g = dy + ((n * Ho + ho) * Wo + wo) * C;
          const T* k = wt.data() + (kh * s.KW + kw) * C;
          for (int64_t c = 0; c < C; ++c) out[c] += g[c] * k[c];
        });
      }
    }
  });
}

// Backward weight: dw[c, kh, kw] = sum_p dy[p, c] * x[tap (kh, kw) of p, c], db[c] = sum_p dy[p, c].
// Each thread owns a slice of channels over every pixel: race-free and order-stable. Within an
// output row, the float32 interior pixels of a 3x3 layer (every depthwise layer of MobileNetV2) run
// a register-blocked loop: 8 channels x 9 taps of accumulators stay in registers for the whole
// row's interior, instead of one load/add/store of the accumulator per tap and pixel; other kernel
// sizes take the plain loop. Pixels are still visited in order, so every sum runs over the pixels
// in the same order as the plain loop.
namespace {
// acc[t * width + c] and bias[c] for channels [c, c+8) of `a`, over output columns [wo0, wo1) of row
// (n, ho); every tap of those columns lies inside the row. KH and KW are template parameters so that
// the tap loops unroll and a[] lives in registers: with run-time sizes (the first version, until
// 2026-12-03) GCC kept a[] on the stack, and every update was a load, an FMA and a store (seen in
// `g++ -O3 -march=x86-64-v3 -S`), a store-to-load chain per tap and pixel.
template <int KH, int KW>
void backward_weight_row_block(const ConvShape& s, int64_t n, int64_t ho, int64_t wo0, int64_t wo1, int64_t c,
                               const float* x, const float* dy, float* acc, int64_t width, float* bias) {
  v8 a[KH * KW], bsum = *reinterpret_cast<const v8*>(bias);
#pragma GCC unroll 16
  for (int t = 0; t < KH * KW; ++t) a[t] = *reinterpret_cast<const v8*>(acc + t * width);
  // The input rows of this output row's taps; a row outside the image (padding) has none.
  const float* rows[KH];
  bool inside[KH];
#pragma GCC unroll 4
  for (int kh = 0; kh < KH; ++kh) {
    const int64_t h = ho * s.stride_h - s.pad_h + kh * s.dil_h;
    inside[kh] = h >= 0 && h < s.H;
    rows[kh] = inside[kh] ? x + ((n * s.H + h) * s.W - s.pad_w) * s.C + c : nullptr;
  }
  const float* g_row = dy + ((n * s.Ho() + ho) * s.Wo()) * s.C + c;
  const int64_t step = s.stride_w * s.C, dil = s.dil_w * s.C;
  for (int64_t wo = wo0; wo < wo1; ++wo) {
    const v8 g = *reinterpret_cast<const v8*>(g_row + wo * s.C);
    bsum += g;
#pragma GCC unroll 4
    for (int kh = 0; kh < KH; ++kh) {
      if (!inside[kh]) continue;
      const float* in = rows[kh] + wo * step;
#pragma GCC unroll 4
      for (int kw = 0; kw < KW; ++kw) a[kh * KW + kw] += g * *reinterpret_cast<const v8*>(in + kw * dil);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < KH * KW; ++t) *reinterpret_cast<v8*>(acc + t * width) = a[t];
  *reinterpret_cast<v8*>(bias) = bsum;
}
}  // namespace

template <class T>
void conv2d_backward_weight_depthwise(const ConvShape& s, const T* x, const T* dy, T* dw, T* db) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C, taps = s.KH * s.KW;
  const RowWindow inner = interior_columns(s);
  const bool blocked = std::is_same_v<T, float> && s.KH == 3 && s.KW == 3;
  parallel_for(0, C, 16, [&](int64_t c0, int64_t c1) {
    const int64_t width = c1 - c0, width8 = blocked ? width / 8 * 8 : 0;
    std::vector<T> acc(static_cast<size_t>(taps * width), T(0)), bias(static_cast<size_t>(width), T(0));
    // One pixel, channels [cb, width) of the slice, by the plain loop.
    auto pixel = [&](int64_t n, int64_t ho, int64_t wo, int64_t cb) {
      const T* g = dy + ((n * Ho + ho) * Wo + wo) * C + c0;
      for (int64_t c = cb; c < width; ++c) bias[c] += g[c];
      for_each_input_tap(s, ho, wo, [&](int64_t kh, int64_t kw, int64_t h, int64_t wi) {
        const T* in = x + ((n * s.H + h) * s.W + wi) * C + c0;
        T* a = acc.data() + (kh * s.KW + kw) * width;
        for (int64_t c = cb; c < width; ++c) a[c] += g[c] * in[c];
      });
    };
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t ho = 0; ho < Ho; ++ho) {
        for (int64_t wo = 0; wo < inner.wo_lo; ++wo) pixel(n, ho, wo, 0);
        if constexpr (std::is_same_v<T, float>)
          for (int64_t cb = 0; cb < width8; cb += 8)
            backward_weight_row_block<3, 3>(s, n, ho, inner.wo_lo, inner.wo_hi, c0 + cb, x, dy, acc.data() + cb, width,
                                            bias.data() + cb);
        if (width8 < width)
          for (int64_t wo = inner.wo_lo; wo < inner.wo_hi; ++wo) pixel(n, ho, wo, width8);
        for (int64_t wo = inner.wo_hi; wo < Wo; ++wo) pixel(n, ho, wo, 0);
      }
    if (dw)
      for (int64_t c = 0; c < width; ++c)
        for (int64_t t = 0; t < taps; ++t) dw[(c0 + c) * taps + t] = acc[t * width + c];
    if (db)
      for (int64_t c = 0; c < width; ++c) db[c0 + c] = bias[c];
  });
}

#define SEG_CONV_DEPTHWISE_INSTANTIATE(T)                                                             \
  template std::vector<T> depthwise_weights_by_tap<T>(const ConvShape&, const T*);                   \
  template void conv2d_forward_depthwise<T>(const ConvShape&, const T*, const T*, const T*, T*);      \
  template void conv2d_backward_data_depthwise<T>(const ConvShape&, const T*, const T*, T*);          \
  template void conv2d_backward_weight_depthwise<T>(const ConvShape&, const T*, const T*, T*, T*);
SEG_CONV_DEPTHWISE_INSTANTIATE(float)
SEG_CONV_DEPTHWISE_INSTANTIATE(double)
#undef SEG_CONV_DEPTHWISE_INSTANTIATE

}  // namespace seg::cpu
