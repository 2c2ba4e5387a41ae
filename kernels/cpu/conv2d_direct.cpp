// Direct convolution: the sums of conv2d.h reorganised for contiguous inner loops and threads.
// The fast paths of the ops issue (GEMM for 1x1, 3x3, depthwise) sit beside it and are tested
// against the same reference.
#include <algorithm>
#include <vector>

#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

namespace {
template <class T>
inline acc_t<T> dot(const T* a, const T* b, int64_t n) {
  acc_t<T> s = 0;
  for (int64_t i = 0; i < n; ++i) s += load(a[i]) * load(b[i]);
  return s;
}
}  // namespace

template <class T>
void conv2d_forward_direct(const ConvShape& s, const T* x, const T* w, const T* b, T* y) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), Cg = s.Cg(), Og = s.Og();
  const int64_t row_work = Wo * s.O * s.KH * s.KW * Cg;
  parallel_for(0, s.N * Ho, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(row_work, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / Ho, ho = r % Ho;
      for (int64_t wo = 0; wo < Wo; ++wo) {
        T* out = y + (r * Wo + wo) * s.O;
        for (int64_t o = 0; o < s.O; ++o) {
          const int64_t g = o / Og;
          acc_t<T> acc = b ? load(b[o]) : acc_t<T>(0);
          for_each_input_tap(s, ho, wo, [&](int64_t kh, int64_t kw, int64_t hi, int64_t wi) {
            acc += dot(x + ((n * s.H + hi) * s.W + wi) * s.C + g * Cg, w + ((o * s.KH + kh) * s.KW + kw) * Cg, Cg);
          });
          out[o] = store<T>(acc);
        }
      }
    }
  });
}

template <class T>
void conv2d_backward_data_direct(const ConvShape& s, const T* w, const T* dy, T* dx) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), Cg = s.Cg(), Og = s.Og();
  parallel_for(0, s.N * s.H, 1, [&](int64_t r0, int64_t r1) {
    std::vector<acc_t<T>> acc(static_cast<size_t>(s.C));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / s.H, hi = r % s.H;
      for (int64_t wi = 0; wi < s.W; ++wi) {
        std::fill(acc.begin(), acc.end(), acc_t<T>(0));
        // Gather every output position whose window covers (hi, wi).
        for_each_output_reading(s, hi, wi, [&](int64_t kh, int64_t kw, int64_t ho, int64_t wo) {
          const T* g_out = dy + ((n * Ho + ho) * Wo + wo) * s.O;
          for (int64_t o = 0; o < s.O; ++o) {
            const acc_t<T> go = load(g_out[o]);
            const T* wr = w + ((o * s.KH + kh) * s.KW + kw) * Cg;
            acc_t<T>* a = acc.data() + (o / Og) * Cg;
            for (int64_t c = 0; c < Cg; ++c) a[c] += go * load(wr[c]);
          }
        });
        T* out = dx + ((n * s.H + hi) * s.W + wi) * s.C;
        for (int64_t c = 0; c < s.C; ++c) out[c] = store<T>(acc[static_cast<size_t>(c)]);
      }
    }
  });
}

template <class T>
void conv2d_backward_weight_direct(const ConvShape& s, const T* x, const T* dy, T* dw, T* db) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), Cg = s.Cg(), Og = s.Og();
  const int64_t taps = s.KH * s.KW * Cg;
  parallel_for(0, s.O, 1, [&](int64_t o0, int64_t o1) {
    std::vector<acc_t<T>> acc(static_cast<size_t>(taps));
    for (int64_t o = o0; o < o1; ++o) {
      std::fill(acc.begin(), acc.end(), acc_t<T>(0));
      acc_t<T> bias = 0;
      const int64_t g = o / Og;
      for (int64_t n = 0; n < s.N; ++n)
        for (int64_t ho = 0; ho < Ho; ++ho)
          for (int64_t wo = 0; wo < Wo; ++wo) {
            const acc_t<T> go = load(dy[((n * Ho + ho) * Wo + wo) * s.O + o]);
            bias += go;
            if (go == 0) continue;
            for_each_input_tap(s, ho, wo, [&](int64_t kh, int64_t kw, int64_t hi, int64_t wi) {
              const T* xr = x + ((n * s.H + hi) * s.W + wi) * s.C + g * Cg;
              acc_t<T>* a = acc.data() + (kh * s.KW + kw) * Cg;
              for (int64_t c = 0; c < Cg; ++c) a[c] += go * load(xr[c]);
            });
          }
      if (dw)
        for (int64_t i = 0; i < taps; ++i) dw[o * taps + i] = store<T>(acc[static_cast<size_t>(i)]);
      if (db) db[o] = store<T>(bias);
    }
  });
}

#define SEG_INSTANTIATE_CONV_DIRECT(T)                                                        \
  template void conv2d_forward_direct<T>(const ConvShape&, const T*, const T*, const T*, T*); \
  template void conv2d_backward_data_direct<T>(const ConvShape&, const T*, const T*, T*);     \
  template void conv2d_backward_weight_direct<T>(const ConvShape&, const T*, const T*, T*, T*);
SEG_INSTANTIATE_CONV_DIRECT(float)
SEG_INSTANTIATE_CONV_DIRECT(double)

}  // namespace seg::cpu
