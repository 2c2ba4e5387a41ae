#include "kernels/cpu/softmax.h"

#include <cmath>

#include "kernels/common/half.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

template <class T>
void softmax_forward(const T* x, int64_t P, int64_t C, T* y, bool log) {
  parallel_for(0, P, std::max<int64_t>(1, 8192 / C), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* xr = x + p * C;
      T* yr = y + p * C;
      acc_t<T> m = load(xr[0]);
      for (int64_t c = 1; c < C; ++c) m = std::max(m, load(xr[c]));
      acc_t<T> s = 0;
      for (int64_t c = 0; c < C; ++c) s += std::exp(load(xr[c]) - m);
      if (log) {
        const acc_t<T> shift = m + std::log(s);
        for (int64_t c = 0; c < C; ++c) yr[c] = store<T>(load(xr[c]) - shift);
      } else {
        const acc_t<T> inv = acc_t<T>(1) / s;
        for (int64_t c = 0; c < C; ++c) yr[c] = store<T>(std::exp(load(xr[c]) - m) * inv);
      }
    }
  });
}

template <class T>
void softmax_backward(const T* y, const T* dy, int64_t P, int64_t C, T* dx, bool log) {
  parallel_for(0, P, std::max<int64_t>(1, 8192 / C), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* yr = y + p * C;
      const T* gr = dy + p * C;
      T* dr = dx + p * C;
      acc_t<T> s = 0;
      if (log) {
        for (int64_t c = 0; c < C; ++c) s += load(gr[c]);
        for (int64_t c = 0; c < C; ++c) dr[c] = store<T>(load(gr[c]) - std::exp(load(yr[c])) * s);
      } else {
        for (int64_t c = 0; c < C; ++c) s += load(gr[c]) * load(yr[c]);
        for (int64_t c = 0; c < C; ++c) dr[c] = store<T>(load(yr[c]) * (load(gr[c]) - s));
      }
    }
  });
}

template <class T>
void argmax_channels(const T* x, int64_t P, int64_t C, int32_t* out) {
  parallel_for(0, P, std::max<int64_t>(1, 8192 / C), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* xr = x + p * C;
      acc_t<T> best = load(xr[0]);
      int32_t where = 0;
      if (!std::isnan(best))
        for (int64_t c = 1; c < C; ++c) {
          const acc_t<T> v = load(xr[c]);
          if (v > best || std::isnan(v)) {
            best = v;
            where = static_cast<int32_t>(c);
            if (std::isnan(v)) break;
          }
        }
      out[p] = where;
    }
  });
}

#define SEG_INSTANTIATE_SOFTMAX(T)                                                        \
  template void softmax_forward<T>(const T*, int64_t, int64_t, T*, bool);                \
  template void softmax_backward<T>(const T*, const T*, int64_t, int64_t, T*, bool);     \
  template void argmax_channels<T>(const T*, int64_t, int64_t, int32_t*);
SEG_INSTANTIATE_SOFTMAX(float)
SEG_INSTANTIATE_SOFTMAX(double)
SEG_INSTANTIATE_SOFTMAX(f16)
SEG_INSTANTIATE_SOFTMAX(bf16)

}  // namespace seg::cpu
