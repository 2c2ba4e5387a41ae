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
// memory-bound, like on the GPU (see notes on depthwise convolution).
#include <algorithm>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

namespace {
template <class T>
std::vector<T> transpose_taps(const ConvShape& s, const T* w) {
  const int64_t taps = s.KH * s.KW;
  std::vector<T> wt(static_cast<size_t>(taps * s.C));
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t t = 0; t < taps; ++t) wt[t * s.C + c] = w[c * taps + t];
  return wt;
}
}  // namespace

bool conv2d_is_depthwise(const ConvShape& s) { return s.groups == s.C && s.O == s.C && s.groups > 1; }

template <class T>
void conv2d_forward_depthwise(const ConvShape& s, const T* x, const T* w, const T* b, T* y) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C;
  const std::vector<T> wt = transpose_taps(s, w);
  parallel_for(0, s.N * Ho, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / Ho, ho = r % Ho;
      for (int64_t wo = 0; wo < Wo; ++wo) {
        T* out = y + (r * Wo + wo) * C;
        if (b) std::copy(b, b + C, out);
        else std::fill(out, out + C, T(0));
        for_each_input_tap(s, ho, wo, [&](int64_t kh, int64_t kw, int64_t h, int64_t wi) {
          const T* in = x + ((n * s.H + h) * s.W + wi) * C;
          const T* k = wt.data() + (kh * s.KW + kw) * C;
          for (int64_t c = 0; c < C; ++c) out[c] += in[c] * k[c];
        });
      }
    }
  });
}

template <class T>
void conv2d_backward_data_depthwise(const ConvShape& s, const T* w, const T* dy, T* dx) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C;
  const std::vector<T> wt = transpose_taps(s, w);
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

template <class T>
void conv2d_backward_weight_depthwise(const ConvShape& s, const T* x, const T* dy, T* dw, T* db) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C, taps = s.KH * s.KW;
  // Each thread owns a slice of channels over every pixel: race-free and order-stable.
  parallel_for(0, C, 16, [&](int64_t c0, int64_t c1) {
    const int64_t width = c1 - c0;
    std::vector<T> acc(static_cast<size_t>(taps * width), T(0)), bias(static_cast<size_t>(width), T(0));
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t ho = 0; ho < Ho; ++ho)
        for (int64_t wo = 0; wo < Wo; ++wo) {
          const T* g = dy + ((n * Ho + ho) * Wo + wo) * C + c0;
          for (int64_t c = 0; c < width; ++c) bias[c] += g[c];
          for_each_input_tap(s, ho, wo, [&](int64_t kh, int64_t kw, int64_t h, int64_t wi) {
            const T* in = x + ((n * s.H + h) * s.W + wi) * C + c0;
            T* a = acc.data() + (kh * s.KW + kw) * width;
            for (int64_t c = 0; c < width; ++c) a[c] += g[c] * in[c];
          });
        }
    if (dw)
      for (int64_t c = 0; c < width; ++c)
        for (int64_t t = 0; t < taps; ++t) dw[(c0 + c) * taps + t] = acc[t * width + c];
    if (db)
      for (int64_t c = 0; c < width; ++c) db[c0 + c] = bias[c];
  });
}

#define SEG_CONV_DEPTHWISE_INSTANTIATE(T)                                                             \
  template void conv2d_forward_depthwise<T>(const ConvShape&, const T*, const T*, const T*, T*);      \
  template void conv2d_backward_data_depthwise<T>(const ConvShape&, const T*, const T*, T*);          \
  template void conv2d_backward_weight_depthwise<T>(const ConvShape&, const T*, const T*, T*, T*);
SEG_CONV_DEPTHWISE_INSTANTIATE(float)
SEG_CONV_DEPTHWISE_INSTANTIATE(double)
#undef SEG_CONV_DEPTHWISE_INSTANTIATE

}  // namespace seg::cpu
