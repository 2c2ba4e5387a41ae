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

// Backward weight as a sum of outer products over output pixels:
//   dw[o, kh, kw, c] = sum_p dy[p, o] * x[tap (kh, kw) of p, c],   db[o] = sum_p dy[p, o]
// The pixels are cut into fixed chunks of kPixelChunk (independent of the thread count, so the
// result is too); a work item is (group, block of <= kOutBlock output channels, chunk) and keeps its
// partial sums acc[tap, c, o] with o innermost, so the inner loop is one vector multiply-add of a
// broadcast x value with a contiguous row of dy. The chunks' partials are then added in chunk order,
// in double, into dw's [O, KH, KW, Cg] layout.
// Why: the first layer of every model (3 input channels, 27 taps) is a GEMM of depth N*Ho*Wo but
// only 27 x O outputs, which the implicit GEMM packs one 3-float run at a time and cannot split
// over threads (it never splits K); here it is 2 x (27 x O) multiply-adds per pixel from L1.
// The automatic dispatcher takes this path for backward weight when Cg <= 4 (conv2d_dispatch.cpp).
// Memory: partials of chunks x Kc x O accumulators (the first layer at 256x256, batch 4: 110 kB).
template <class T>
void conv2d_backward_weight_direct(const ConvShape& s, const T* x, const T* dy, T* dw, T* db) {
  using A = acc_t<T>;
  constexpr int64_t kPixelChunk = 2048, kOutBlock = 64;
  const int64_t Ho = s.Ho(), Wo = s.Wo(), Cg = s.Cg(), Og = s.Og(), taps = s.KH * s.KW, Kc = taps * Cg;
  const int64_t P = s.N * Ho * Wo, chunks = std::max<int64_t>(1, (P + kPixelChunk - 1) / kPixelChunk);
  const int64_t oblocks = (Og + kOutBlock - 1) / kOutBlock;
  // part[chunk][o][kc + 1]: Kc tap sums and the bias sum, for every output channel o of the layer.
  const int64_t row = Kc + 1;
  std::vector<A> part(static_cast<size_t>(chunks * s.O * row));
  parallel_for(0, s.groups * oblocks * chunks, 1, [&](int64_t i0, int64_t i1) {
    std::vector<A> acc(static_cast<size_t>(row * kOutBlock));
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t chunk = item % chunks, ob = (item / chunks) % oblocks, g = item / (chunks * oblocks);
      const int64_t o0 = g * Og + ob * kOutBlock, width = std::min(kOutBlock, (g + 1) * Og - o0);
      std::fill(acc.begin(), acc.end(), A(0));
      A* bias = acc.data() + Kc * width;
      for (int64_t p = chunk * kPixelChunk; p < std::min(P, (chunk + 1) * kPixelChunk); ++p) {
        const int64_t n = p / (Ho * Wo), ho = (p / Wo) % Ho, wo = p % Wo;
        const T* g_out = dy + p * s.O + o0;
        A grad[kOutBlock];
        for (int64_t o = 0; o < width; ++o) grad[o] = load(g_out[o]);
        for (int64_t o = 0; o < width; ++o) bias[o] += grad[o];
        for_each_input_tap(s, ho, wo, [&](int64_t kh, int64_t kw, int64_t hi, int64_t wi) {
          const T* xr = x + ((n * s.H + hi) * s.W + wi) * s.C + g * Cg;
          A* a = acc.data() + (kh * s.KW + kw) * Cg * width;
          for (int64_t c = 0; c < Cg; ++c, a += width) {
            const A xv = load(xr[c]);
            for (int64_t o = 0; o < width; ++o) a[o] += xv * grad[o];
          }
        });
      }
      for (int64_t o = 0; o < width; ++o) {
        A* out = part.data() + (chunk * s.O + o0 + o) * row;
        for (int64_t k = 0; k < row; ++k) out[k] = acc[k * width + o];
      }
    }
  });
  parallel_for(0, s.O, 1, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t k = 0; k < row; ++k) {
        double sum = 0;
        for (int64_t chunk = 0; chunk < chunks; ++chunk) sum += part[(chunk * s.O + o) * row + k];
        if (k < Kc && dw) dw[o * Kc + k] = store<T>(static_cast<A>(sum));
        if (k == Kc && db) db[o] = store<T>(static_cast<A>(sum));
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
