#include "kernels/cpu/softmax_nll.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

namespace {
constexpr int64_t kPixelGrain = 2048;  // fixed chunking: identical sums for any thread count
}

template <class T, class L>
NllResult softmax_nll_forward(const T* logits, const int32_t* labels, int64_t P, int64_t C, L* lse) {
  struct Partial {
    double loss = 0;
    int64_t valid = 0;
    int64_t bad = -1;
  };
  const Partial total = parallel_reduce(
      int64_t{0}, P, kPixelGrain, Partial{},
      [&](int64_t lo, int64_t hi) {
        Partial part;
        for (int64_t p = lo; p < hi; ++p) {
          const T* row = logits + p * C;
          L m = static_cast<L>(row[0]);
          for (int64_t c = 1; c < C; ++c) m = std::max(m, static_cast<L>(row[c]));
          L s = 0;
          for (int64_t c = 0; c < C; ++c) s += std::exp(static_cast<L>(row[c]) - m);
          const L l = m + std::log(s);
          lse[p] = l;
          const int32_t y = labels[p];
          if (y < -1 || y >= C) {
            if (part.bad < 0) part.bad = p;
            continue;
          }
          if (y < 0) continue;
          part.loss += static_cast<double>(l - static_cast<L>(row[y]));
          ++part.valid;
        }
        return part;
      },
      [](Partial a, const Partial& b) {
        a.loss += b.loss;
        a.valid += b.valid;
        if (a.bad < 0) a.bad = b.bad;
        return a;
      });
  NllResult r;
  r.loss_sum = total.loss;
  r.valid = total.valid;
  r.bad_pixel = total.bad;
  if (total.bad >= 0) r.bad_label = labels[total.bad];
  return r;
}

template <class T, class L>
void softmax_nll_backward(const T* logits, const int32_t* labels, const L* lse, int64_t P, int64_t C, double scale,
                          T* dlogits) {
  const L k = static_cast<L>(scale);
  parallel_for(0, P, kPixelGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      T* d = dlogits + p * C;
      const int32_t y = labels[p];
      if (y < 0 || y >= C) {
        std::fill(d, d + C, T(0));
        continue;
      }
      const T* row = logits + p * C;
      for (int64_t c = 0; c < C; ++c) d[c] = static_cast<T>(k * std::exp(static_cast<L>(row[c]) - lse[p]));
      d[y] = static_cast<T>(static_cast<L>(d[y]) - k);
    }
  });
}

template <class T>
NllResult softmax_nll_forward_ref(const T* logits, const int32_t* labels, int64_t P, int64_t C) {
  NllResult r;
  for (int64_t p = 0; p < P; ++p) {
    const int32_t y = labels[p];
    if (y < -1 || y >= C) {
      if (r.bad_pixel < 0) {
        r.bad_pixel = p;
        r.bad_label = y;
      }
      continue;
    }
    if (y < 0) continue;
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(static_cast<double>(logits[p * C + c]));
    r.loss_sum += -(static_cast<double>(logits[p * C + y]) - std::log(s));
    ++r.valid;
  }
  return r;
}

template NllResult softmax_nll_forward<float, float>(const float*, const int32_t*, int64_t, int64_t, float*);
template NllResult softmax_nll_forward<double, double>(const double*, const int32_t*, int64_t, int64_t, double*);
template void softmax_nll_backward<float, float>(const float*, const int32_t*, const float*, int64_t, int64_t, double,
                                                 float*);
template void softmax_nll_backward<double, double>(const double*, const int32_t*, const double*, int64_t, int64_t,
                                                   double, double*);
template NllResult softmax_nll_forward_ref<float>(const float*, const int32_t*, int64_t, int64_t);
template NllResult softmax_nll_forward_ref<double>(const double*, const int32_t*, int64_t, int64_t);

}  // namespace seg::cpu
