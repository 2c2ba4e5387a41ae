#include "kernels/cpu/dropout.h"

#include "kernels/common/half.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

void dropout2d_mask(PhiloxKey key, uint64_t stream, int64_t N, int64_t C, double p, uint8_t* keep) {
  for (int64_t i = 0; i < N * C; ++i) {
    // One Philox block per element: simple, and N*C is small (a few thousand).
    const PhiloxCounter ctr{{static_cast<uint32_t>(i), static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32),
                             static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)}};
    const float u = philox_uniform(philox4x32_10(ctr, key).c[0]);
    keep[i] = static_cast<double>(u) >= p ? 1 : 0;
  }
}

template <class T>
void dropout2d_apply(const T* x, const uint8_t* keep, double scale, int64_t N, int64_t HW, int64_t C, T* y) {
  const acc_t<T> k = static_cast<acc_t<T>>(scale);
  parallel_for(0, N * HW, std::max<int64_t>(1, 16384 / C), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const uint8_t* m = keep + (p / HW) * C;
      for (int64_t c = 0; c < C; ++c) y[p * C + c] = store<T>(m[c] ? load(x[p * C + c]) * k : acc_t<T>(0));
    }
  });
}

template void dropout2d_apply<float>(const float*, const uint8_t*, double, int64_t, int64_t, int64_t, float*);
template void dropout2d_apply<double>(const double*, const uint8_t*, double, int64_t, int64_t, int64_t, double*);
template void dropout2d_apply<f16>(const f16*, const uint8_t*, double, int64_t, int64_t, int64_t, f16*);
template void dropout2d_apply<bf16>(const bf16*, const uint8_t*, double, int64_t, int64_t, int64_t, bf16*);

}  // namespace seg::cpu
