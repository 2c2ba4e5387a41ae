// Elementwise CPU kernels over contiguous arrays of n elements.
//
// T is the storage type (float, double, f16, bf16); arithmetic happens in acc_t<T> (double for
// double, float otherwise), so half tensors are computed in float and rounded once on store.
// The loops are written plainly; with -O2 -march=x86-64-v3 GCC vectorises the float versions.
// Memory traffic per element: reads of each input plus one write; all bandwidth-bound.
// Parallel over the thread pool in slices of >= 32K elements.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/half.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

template <class T> using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T> inline acc_t<T> load(const T& v) { return static_cast<acc_t<T>>(v); }
template <class T> inline T store(acc_t<T> v) {
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) return T(v);
  else return static_cast<T>(v);
}

constexpr int64_t kElementwiseGrain = 1 << 15;

// out[i] = f(a[i])
template <class T, class F>
void map1(const T* a, T* out, int64_t n, F f) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = store<T>(f(load(a[i])));
  });
}

// out[i] = f(a[i], b[i])
template <class T, class F>
void map2(const T* a, const T* b, T* out, int64_t n, F f) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = store<T>(f(load(a[i]), load(b[i])));
  });
}

template <class T> void add(const T* a, const T* b, T* out, int64_t n) {
  map2(a, b, out, n, [](auto x, auto y) { return x + y; });
}
template <class T> void add_inplace(T* dst, const T* src, int64_t n) {
  map2(dst, src, dst, n, [](auto x, auto y) { return x + y; });
}
template <class T> void mul(const T* a, const T* b, T* out, int64_t n) {
  map2(a, b, out, n, [](auto x, auto y) { return x * y; });
}
template <class T> void scale(const T* a, double s, T* out, int64_t n) {
  const acc_t<T> k = static_cast<acc_t<T>>(s);
  map1(a, out, n, [k](auto x) { return x * k; });
}

// ReLU: y = max(x, 0);  dx = dy * (x > 0).  ReLU6: y = min(max(x, 0), 6);  dx = dy * (0 < x < 6).
template <class T> void relu_forward(const T* x, T* y, int64_t n, bool relu6) {
  if (relu6) map1(x, y, n, [](auto v) { return v > 0 ? (v < 6 ? v : decltype(v)(6)) : decltype(v)(0); });
  else map1(x, y, n, [](auto v) { return v > 0 ? v : decltype(v)(0); });
}
template <class T> void relu_backward(const T* x, const T* dy, T* dx, int64_t n, bool relu6) {
  if (relu6) map2(x, dy, dx, n, [](auto v, auto g) { return (v > 0 && v < 6) ? g : decltype(g)(0); });
  else map2(x, dy, dx, n, [](auto v, auto g) { return v > 0 ? g : decltype(g)(0); });
}

// Sum of all elements in double (deterministic chunked order, see thread_pool.h).
template <class T> double sum(const T* a, int64_t n) {
  return parallel_reduce(
      int64_t{0}, n, 1 << 14, 0.0,
      [&](int64_t lo, int64_t hi) {
        double s = 0;
        for (int64_t i = lo; i < hi; ++i) s += static_cast<double>(load(a[i]));
        return s;
      },
      [](double x, double y) { return x + y; });
}

}  // namespace seg::cpu
