// Elementwise CPU kernels over contiguous arrays of n elements.
//
// T is the storage type (float, double, f16, bf16); arithmetic happens in acc_t<T> (double for
// double, float otherwise), so half tensors are computed in float and rounded once on store.
// The loops are written plainly; with -O2 -march=x86-64-v3 GCC vectorises the float versions.
// Memory traffic per element: reads of each input plus one write; all bandwidth-bound.
// Parallel over the thread pool in slices of >= 32K elements.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/common/half.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/thread_pool.h"

namespace seg::cpu {

template <class T> using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Loads and stores of the storage type. f16 goes through the CPU's F16C conversion instructions
// (x86-64-v3 has them; GCC's _Float16 emits them), which round exactly like the software conversion
// in kernels/common/half.h but are ~20x faster; only NaN payloads can differ (hardware keeps them,
// the reference returns the canonical NaN). bf16 uses the branch-free software rounding.
// clang supports _Float16 on x86 from version 15; older clangs (the fuzz build uses Debian's 14) take
// the software path, which rounds the same.
#if defined(__F16C__) && (!defined(__clang__) || __clang_major__ >= 15)
#define SEG_CPU_FLOAT16 1
#endif
template <class T> inline acc_t<T> load(const T& v) {
#if defined(SEG_CPU_FLOAT16)
  if constexpr (std::is_same_v<T, f16>) {
    _Float16 h;
    std::memcpy(&h, &v.bits, sizeof h);
    return static_cast<float>(h);
  }
#endif
  return static_cast<acc_t<T>>(v);
}
template <class T> inline T store(acc_t<T> v) {
#if defined(SEG_CPU_FLOAT16)
  if constexpr (std::is_same_v<T, f16>) {
    const _Float16 h = static_cast<_Float16>(v);
    T out;
    std::memcpy(&out.bits, &h, sizeof h);
    return out;
  }
#endif
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) return T(v);
  else return static_cast<T>(v);
}

constexpr int64_t kElementwiseGrain = 1 << 15;

// 16-bit storage: a tile of elements is widened to f32 with the SIMD converters, f runs on floats
// (the same vectorised loop as for f32 tensors), and the result is rounded back in one pass.
constexpr int64_t kHalfTile = 1024;

template <class T> inline void widen(const T* src, float* dst, int64_t n) {
  if constexpr (std::is_same_v<T, f16>) convert_f16_to_f32(src, dst, n);
  else convert_bf16_to_f32(src, dst, n);
}
template <class T> inline void narrow(const float* src, T* dst, int64_t n) {
  if constexpr (std::is_same_v<T, f16>) convert_f32_to_f16(src, dst, n);
  else convert_f32_to_bf16(src, dst, n);
}

// out[i] = f(a[i])
template <class T, class F>
void map1(const T* a, T* out, int64_t n, F f) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
      float ta[kHalfTile], to[kHalfTile];
      for (int64_t i0 = lo; i0 < hi; i0 += kHalfTile) {
        const int64_t m = std::min(kHalfTile, hi - i0);
        widen(a + i0, ta, m);
        for (int64_t i = 0; i < m; ++i) to[i] = f(ta[i]);
        narrow(to, out + i0, m);
      }
    } else {
      for (int64_t i = lo; i < hi; ++i) out[i] = store<T>(f(load(a[i])));
    }
  });
}

// out[i] = f(a[i], b[i])
template <class T, class F>
void map2(const T* a, const T* b, T* out, int64_t n, F f) {
  parallel_for(0, n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
      float ta[kHalfTile], tb[kHalfTile], to[kHalfTile];
      for (int64_t i0 = lo; i0 < hi; i0 += kHalfTile) {
        const int64_t m = std::min(kHalfTile, hi - i0);
        widen(a + i0, ta, m);
        widen(b + i0, tb, m);
        for (int64_t i = 0; i < m; ++i) to[i] = f(ta[i], tb[i]);
        narrow(to, out + i0, m);
      }
    } else {
      for (int64_t i = lo; i < hi; ++i) out[i] = store<T>(f(load(a[i]), load(b[i])));
    }
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

// ReLU: y = max(x, 0);  dx = x > 0 ? dy : 0.  ReLU6: y = min(max(x, 0), 6);  dx = 0 < x < 6 ? dy : 0.
// Both must compile to branch-free SIMD: activations are half negative, so a branch per element
// mispredicts half the time. std::max/min give vmaxps/vminps; the backward is a select, which GCC
// turns into a compare and a mask. (An earlier `dy * float(x > 0)` was vectorised for ReLU6 but
// compiled to a scalar loop with a branch for ReLU: 8.4 ms instead of ~2 ms per ResNet50 layer1
// call, found with perf annotate.) The select also matches PyTorch's threshold_backward exactly:
// dx = 0 where x <= 0 even if dy is inf or NaN, and NaN inputs pass no gradient.
// NaN propagates forward as in PyTorch (std::max(NaN, 0) is NaN).
template <class T> void relu_forward(const T* x, T* y, int64_t n, bool relu6) {
  using A = acc_t<T>;
  if (relu6) map1(x, y, n, [](A v) { return std::min(std::max(v, A(0)), A(6)); });
  else map1(x, y, n, [](A v) { return std::max(v, A(0)); });
}
template <class T> void relu_backward(const T* x, const T* dy, T* dx, int64_t n, bool relu6) {
  using A = acc_t<T>;
  if (relu6) map2(x, dy, dx, n, [](A v, A g) { return ((v > A(0)) & (v < A(6))) ? g : A(0); });
  else map2(x, dy, dx, n, [](A v, A g) { return v > A(0) ? g : A(0); });
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
