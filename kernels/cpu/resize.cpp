#include "kernels/cpu/resize.h"

#include <algorithm>
#include <vector>

#include "kernels/common/half.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

namespace {
template <class A>
std::vector<LinearTap<A>> taps(int64_t in, int64_t out) {
  std::vector<LinearTap<A>> t(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) t[i] = bilinear_tap<A>(i, in, out);
  return t;
}
}  // namespace

template <class T>
void resize_bilinear_forward(const ResizeShape& s, const T* x, T* y) {
  const auto th = taps<acc_t<T>>(s.H, s.Ho), tw = taps<acc_t<T>>(s.W, s.Wo);
  const int64_t C = s.C;
  parallel_for(0, s.N * s.Ho, std::max<int64_t>(1, 4096 / (s.Wo * C)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / s.Ho, i = r % s.Ho;
      const auto& a = th[i];
      const T* row0 = x + (n * s.H + a.i0) * s.W * C;
      const T* row1 = x + (n * s.H + a.i1) * s.W * C;
      T* out = y + r * s.Wo * C;
      for (int64_t j = 0; j < s.Wo; ++j) {
        const auto& b = tw[j];
        const T *p00 = row0 + b.i0 * C, *p01 = row0 + b.i1 * C, *p10 = row1 + b.i0 * C, *p11 = row1 + b.i1 * C;
        T* o = out + j * C;
        for (int64_t c = 0; c < C; ++c) {
          const acc_t<T> top = b.l0 * load(p00[c]) + b.l1 * load(p01[c]);
          const acc_t<T> bottom = b.l0 * load(p10[c]) + b.l1 * load(p11[c]);
          o[c] = store<T>(a.l0 * top + a.l1 * bottom);
        }
      }
    }
  });
}

template <class T>
void resize_bilinear_backward(const ResizeShape& s, const T* dy, T* dx) {
  const auto th = taps<acc_t<T>>(s.H, s.Ho), tw = taps<acc_t<T>>(s.W, s.Wo);
  const int64_t C = s.C, P = s.N * s.H * s.W;
  // Accumulate in acc_t over a channel slice, then store.
  parallel_for(0, C, 8, [&](int64_t c0, int64_t c1) {
    const int64_t w = c1 - c0;
    std::vector<acc_t<T>> acc(static_cast<size_t>(P * w), acc_t<T>(0));
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t i = 0; i < s.Ho; ++i) {
        const auto& a = th[i];
        for (int64_t j = 0; j < s.Wo; ++j) {
          const auto& b = tw[j];
          const T* g = dy + ((n * s.Ho + i) * s.Wo + j) * C + c0;
          acc_t<T>* a00 = acc.data() + ((n * s.H + a.i0) * s.W + b.i0) * w;
          acc_t<T>* a01 = acc.data() + ((n * s.H + a.i0) * s.W + b.i1) * w;
          acc_t<T>* a10 = acc.data() + ((n * s.H + a.i1) * s.W + b.i0) * w;
          acc_t<T>* a11 = acc.data() + ((n * s.H + a.i1) * s.W + b.i1) * w;
          const acc_t<T> w00 = a.l0 * b.l0, w01 = a.l0 * b.l1, w10 = a.l1 * b.l0, w11 = a.l1 * b.l1;
          for (int64_t c = 0; c < w; ++c) {
            const acc_t<T> v = load(g[c]);
            a00[c] += w00 * v;
            a01[c] += w01 * v;
            a10[c] += w10 * v;
            a11[c] += w11 * v;
          }
        }
      }
    for (int64_t p = 0; p < P; ++p)
      for (int64_t c = 0; c < w; ++c) dx[p * C + c0 + c] = store<T>(acc[static_cast<size_t>(p * w + c)]);
  });
}

#define SEG_INSTANTIATE_RESIZE(T)                                                  \
  template void resize_bilinear_forward<T>(const ResizeShape&, const T*, T*); \
  template void resize_bilinear_backward<T>(const ResizeShape&, const T*, T*);
SEG_INSTANTIATE_RESIZE(float)
SEG_INSTANTIATE_RESIZE(double)
SEG_INSTANTIATE_RESIZE(f16)
SEG_INSTANTIATE_RESIZE(bf16)

}  // namespace seg::cpu
