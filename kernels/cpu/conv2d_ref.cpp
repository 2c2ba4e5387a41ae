// The naive convolution: the definition in kernels/cpu/conv2d.h written as loops, accumulated in
// double. Slow on purpose: it is what every fast path is tested against.
#include "kernels/cpu/conv2d.h"

#include <cstddef>
#include <vector>

namespace seg::cpu {

template <class T>
void conv2d_forward_ref(const ConvShape& s, const T* x, const T* w, const T* b, T* y) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), Cg = s.Cg(), Og = s.Og();
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t ho = 0; ho < Ho; ++ho)
      for (int64_t wo = 0; wo < Wo; ++wo)
        for (int64_t o = 0; o < s.O; ++o) {
          const int64_t g = o / Og;
          double acc = b ? static_cast<double>(b[o]) : 0.0;
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t hi = ho * s.stride_h - s.pad_h + kh * s.dil_h;
              const int64_t wi = wo * s.stride_w - s.pad_w + kw * s.dil_w;
              if (hi < 0 || hi >= s.H || wi < 0 || wi >= s.W) continue;
              for (int64_t c = 0; c < Cg; ++c)
                acc += static_cast<double>(x[((n * s.H + hi) * s.W + wi) * s.C + g * Cg + c]) *
                       static_cast<double>(w[((o * s.KH + kh) * s.KW + kw) * Cg + c]);
            }
          y[((n * Ho + ho) * Wo + wo) * s.O + o] = static_cast<T>(acc);
        }
}

template <class T>
void conv2d_backward_ref(const ConvShape& s, const T* x, const T* w, const T* dy, T* dx, T* dw, T* db) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), Cg = s.Cg(), Og = s.Og();
  std::vector<double> gx(dx ? s.x_numel() : 0), gw(dw ? s.w_numel() : 0), gb(db ? s.O : 0);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t ho = 0; ho < Ho; ++ho)
      for (int64_t wo = 0; wo < Wo; ++wo)
        for (int64_t o = 0; o < s.O; ++o) {
          const double g_out = static_cast<double>(dy[((n * Ho + ho) * Wo + wo) * s.O + o]);
          const int64_t g = o / Og;
          if (db) gb[o] += g_out;
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t hi = ho * s.stride_h - s.pad_h + kh * s.dil_h;
              const int64_t wi = wo * s.stride_w - s.pad_w + kw * s.dil_w;
              if (hi < 0 || hi >= s.H || wi < 0 || wi >= s.W) continue;
              for (int64_t c = 0; c < Cg; ++c) {
                const int64_t xi = ((n * s.H + hi) * s.W + wi) * s.C + g * Cg + c;
                const int64_t wi_ = ((o * s.KH + kh) * s.KW + kw) * Cg + c;
                if (dx) gx[xi] += g_out * static_cast<double>(w[wi_]);
                if (dw) gw[wi_] += g_out * static_cast<double>(x[xi]);
              }
            }
        }
  for (std::size_t i = 0; i < gx.size(); ++i) dx[i] = static_cast<T>(gx[i]);
  for (std::size_t i = 0; i < gw.size(); ++i) dw[i] = static_cast<T>(gw[i]);
  for (std::size_t i = 0; i < gb.size(); ++i) db[i] = static_cast<T>(gb[i]);
}

template void conv2d_forward_ref<float>(const ConvShape&, const float*, const float*, const float*, float*);
template void conv2d_forward_ref<double>(const ConvShape&, const double*, const double*, const double*, double*);
template void conv2d_backward_ref<float>(const ConvShape&, const float*, const float*, const float*, float*, float*,
                                         float*);
template void conv2d_backward_ref<double>(const ConvShape&, const double*, const double*, const double*, double*,
                                          double*, double*);

}  // namespace seg::cpu
