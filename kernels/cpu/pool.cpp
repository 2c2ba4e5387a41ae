#include "kernels/cpu/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/common/half.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

namespace {
// The first output index o whose window [o*stride - pad, o*stride - pad + kernel) contains i:
// o >= (i + pad - kernel + 1) / stride, rounded up, and >= 0. (The last one is (i + pad) / stride.)
int64_t first_window(int64_t i, const PoolShape& s) {
  const int64_t lo = i + s.pad - s.kernel + 1;
  return lo <= 0 ? 0 : (lo + s.stride - 1) / s.stride;
}
}  // namespace

template <class T>
void maxpool2d_forward(const PoolShape& s, const T* x, T* y, int32_t* argmax) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C;
  parallel_for(0, s.N * Ho, 1, [&](int64_t r0, int64_t r1) {
    std::vector<acc_t<T>> best(static_cast<size_t>(C));
    std::vector<int32_t> where(static_cast<size_t>(C));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / Ho, ho = r % Ho;
      const int64_t h0 = ho * s.stride - s.pad;
      for (int64_t wo = 0; wo < Wo; ++wo) {
        const int64_t w0 = wo * s.stride - s.pad;
        std::fill(best.begin(), best.end(), -std::numeric_limits<acc_t<T>>::infinity());
        const int64_t hs = std::max<int64_t>(h0, 0), ws = std::max<int64_t>(w0, 0);
        std::fill(where.begin(), where.end(), static_cast<int32_t>(hs * s.W + ws));
        for (int64_t h = hs; h < std::min(h0 + s.kernel, s.H); ++h)
          for (int64_t w = ws; w < std::min(w0 + s.kernel, s.W); ++w) {
            const T* px = x + ((n * s.H + h) * s.W + w) * C;
            const int32_t idx = static_cast<int32_t>(h * s.W + w);
            for (int64_t c = 0; c < C; ++c) {
              const acc_t<T> v = load(px[c]);
              if (v > best[c] || std::isnan(v)) {  // PyTorch's rule: first maximum wins, NaN sticks
                best[c] = v;
                where[c] = idx;
              }
            }
          }
        T* py = y + (r * Wo + wo) * C;
        int32_t* pa = argmax + (r * Wo + wo) * C;
        for (int64_t c = 0; c < C; ++c) {
          py[c] = store<T>(best[c]);
          pa[c] = where[c];
        }
      }
    }
  });
}

template <class T>
void maxpool2d_backward(const PoolShape& s, const T* dy, const int32_t* argmax, T* dx) {
  const int64_t Ho = s.Ho(), Wo = s.Wo(), C = s.C;
  parallel_for(0, s.N * s.H, 1, [&](int64_t r0, int64_t r1) {
    std::vector<acc_t<T>> acc(static_cast<size_t>(C));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / s.H, h = r % s.H;
      const int64_t ho_lo = first_window(h, s), ho_hi = std::min(Ho - 1, (h + s.pad) / s.stride);
      for (int64_t w = 0; w < s.W; ++w) {
        std::fill(acc.begin(), acc.end(), acc_t<T>(0));
        const int64_t wo_lo = first_window(w, s), wo_hi = std::min(Wo - 1, (w + s.pad) / s.stride);
        const int32_t me = static_cast<int32_t>(h * s.W + w);
        for (int64_t ho = ho_lo; ho <= ho_hi; ++ho)
          for (int64_t wo = wo_lo; wo <= wo_hi; ++wo) {
            const int64_t o = ((n * Ho + ho) * Wo + wo) * C;
            for (int64_t c = 0; c < C; ++c)
              if (argmax[o + c] == me) acc[c] += load(dy[o + c]);
          }
        T* pd = dx + ((n * s.H + h) * s.W + w) * C;
        for (int64_t c = 0; c < C; ++c) pd[c] = store<T>(acc[c]);
      }
    }
  });
}

template <class T>
void maxpool2d_forward_ref(const PoolShape& s, const T* x, T* y, int32_t* argmax) {
  const int64_t Ho = s.Ho(), Wo = s.Wo();
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t ho = 0; ho < Ho; ++ho)
        for (int64_t wo = 0; wo < Wo; ++wo) {
          double best = -INFINITY;
          int32_t where = -1;
          for (int64_t kh = 0; kh < s.kernel; ++kh)
            for (int64_t kw = 0; kw < s.kernel; ++kw) {
              const int64_t h = ho * s.stride - s.pad + kh, w = wo * s.stride - s.pad + kw;
              if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
              const double v = static_cast<double>(x[((n * s.H + h) * s.W + w) * s.C + c]);
              if (where < 0 || v > best) {
                best = v;
                where = static_cast<int32_t>(h * s.W + w);
              }
            }
          y[((n * Ho + ho) * Wo + wo) * s.C + c] = static_cast<T>(best);
          argmax[((n * Ho + ho) * Wo + wo) * s.C + c] = where;
        }
}

template <class T>
void adaptive_avgpool2d_forward(const T* x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo, T* y) {
  parallel_for(0, N * Ho, 1, [&](int64_t r0, int64_t r1) {
    std::vector<acc_t<T>> acc(static_cast<size_t>(C));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / Ho, i = r % Ho;
      const int64_t h0 = adaptive_start(i, H, Ho), h1 = adaptive_end(i, H, Ho);
      for (int64_t j = 0; j < Wo; ++j) {
        const int64_t w0 = adaptive_start(j, W, Wo), w1 = adaptive_end(j, W, Wo);
        std::fill(acc.begin(), acc.end(), acc_t<T>(0));
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) {
            const T* px = x + ((n * H + h) * W + w) * C;
            for (int64_t c = 0; c < C; ++c) acc[c] += load(px[c]);
          }
        const acc_t<T> inv = acc_t<T>(1) / static_cast<acc_t<T>>((h1 - h0) * (w1 - w0));
        T* py = y + (r * Wo + j) * C;
        for (int64_t c = 0; c < C; ++c) py[c] = store<T>(acc[c] * inv);
      }
    }
  });
}

template <class T>
void adaptive_avgpool2d_backward(const T* dy, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo,
                                 T* dx) {
  // Gather: input row h belongs to the output rows i with start(i) <= h < end(i).
  parallel_for(0, N * H, 1, [&](int64_t r0, int64_t r1) {
    std::vector<acc_t<T>> acc(static_cast<size_t>(C));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / H, h = r % H;
      for (int64_t w = 0; w < W; ++w) {
        std::fill(acc.begin(), acc.end(), acc_t<T>(0));
        for (int64_t i = 0; i < Ho; ++i) {
          const int64_t h0 = adaptive_start(i, H, Ho), h1 = adaptive_end(i, H, Ho);
          if (h < h0 || h >= h1) continue;
          for (int64_t j = 0; j < Wo; ++j) {
            const int64_t w0 = adaptive_start(j, W, Wo), w1 = adaptive_end(j, W, Wo);
            if (w < w0 || w >= w1) continue;
            const acc_t<T> inv = acc_t<T>(1) / static_cast<acc_t<T>>((h1 - h0) * (w1 - w0));
            const T* pg = dy + ((n * Ho + i) * Wo + j) * C;
            for (int64_t c = 0; c < C; ++c) acc[c] += load(pg[c]) * inv;
          }
        }
        T* pd = dx + ((n * H + h) * W + w) * C;
        for (int64_t c = 0; c < C; ++c) pd[c] = store<T>(acc[c]);
      }
    }
  });
}

#define SEG_INSTANTIATE_POOL(T)                                                                               \
  template void maxpool2d_forward<T>(const PoolShape&, const T*, T*, int32_t*);                               \
  template void maxpool2d_backward<T>(const PoolShape&, const T*, const int32_t*, T*);                        \
  template void adaptive_avgpool2d_forward<T>(const T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, T*); \
  template void adaptive_avgpool2d_backward<T>(const T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, T*);
SEG_INSTANTIATE_POOL(float)
SEG_INSTANTIATE_POOL(double)
SEG_INSTANTIATE_POOL(f16)
SEG_INSTANTIATE_POOL(bf16)
template void maxpool2d_forward_ref<float>(const PoolShape&, const float*, float*, int32_t*);
template void maxpool2d_forward_ref<double>(const PoolShape&, const double*, double*, int32_t*);

}  // namespace seg::cpu
