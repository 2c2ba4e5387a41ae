// Device-side access to storage types, for the .cu files of kernels/cuda (not a launcher header).
//
// The launchers take seg::f16 / seg::bf16 (kernels/common/half.h), bit-compatible with CUDA's
// __half / __nv_bfloat16; kernels work on the CUDA types, reached through device_t<T> and dptr().
//
//   to_float(v)              storage value -> f32 (exact)
//   from_float<T>(f)         f32 -> storage, round to nearest even (the CPU's rule, kernels/common/half.h)
//   convert_value<D>(s)      the CPU copy's rule (kernels/cpu/copy.h): 16-bit types through f32,
//                            everything else a static_cast
//   Pack<T, N>               N elements in one aligned load or store (16 bytes at most); nvcc emits
//                            one ld/st.global.v2/v4 for it when the address is aligned to the pack
//   aligned_start(p, N)      the first element index from which p + i is aligned for Pack<T, N>
//
// Arithmetic helpers: mul/add/sub round each operation once (__fmul_rn etc.; nvcc never fuses them),
// fma(a, b, c) rounds a*b+c once (__fmaf_rn). Neither compiler's contraction may decide where a
// kernel rounds: nvcc contracts a*b+c into an fma by default, and so does g++ for the CPU twins
// (-march=x86-64-v3 has FMA, and GCC contracts in C++ even in ISO mode). So where the CPU twin
// must be bit-identical, both sides spell the rounding out: the twin writes std::fma where it wants
// one rounding (the optimizer steps, kernels/cpu/sgd.h), the kernel writes dev::fma there, and
// dev::mul/add/sub where the twin rounds twice (add, mul, scale, ReLU, dropout). The simulator's
// __f*_rn are opaque to g++ for the same reason (kernels/sim/intrinsics.h). First seen on an H200:
// the SGD steps were 1 ulp off the CPU's on a few elements, in CI's simulator never.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/common/half.h"

// `#pragma unroll` for both compilers (g++ would warn about nvcc's spelling).
#if defined(__CUDACC__)
#define SEG_UNROLL _Pragma("unroll")
#else
#define SEG_UNROLL _Pragma("GCC unroll 16")
#endif

namespace seg::cuda::dev {

template <class T> struct device_type {
  using type = T;
};
template <> struct device_type<::seg::f16> {
  using type = __half;
};
template <> struct device_type<::seg::bf16> {
  using type = __nv_bfloat16;
};
template <class T> using device_t = typename device_type<T>::type;

template <class T> inline constexpr bool is_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Launcher pointers as device-type pointers (same bits, see kernels/common/half.h).
template <class T> inline device_t<T>* dptr(T* p) { return reinterpret_cast<device_t<T>*>(p); }
template <class T> inline const device_t<T>* dptr(const T* p) { return reinterpret_cast<const device_t<T>*>(p); }

// A launcher's by-value storage argument (a seg::f16 value) as the device type.
template <class T> inline device_t<T> dvalue(T v) {
  if constexpr (std::is_same_v<T, ::seg::f16>) {
    __half_raw r;
    r.x = v.bits;
    return __half(r);
  } else if constexpr (std::is_same_v<T, ::seg::bf16>) {
    __nv_bfloat16_raw r;
    r.x = v.bits;
    return __nv_bfloat16(r);
  } else {
    return v;
  }
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return v;
}

template <class D, class S> __device__ __forceinline__ D convert_value(S v) {
  if constexpr (std::is_same_v<D, S>) return v;
  else if constexpr (is_half_v<D> && is_half_v<S>) return from_float<D>(to_float(v));
  else if constexpr (is_half_v<D>) return from_float<D>(static_cast<float>(v));
  else if constexpr (is_half_v<S>) return static_cast<D>(to_float(v));
  else return static_cast<D>(v);
}

// Single-rounding arithmetic (see the header comment).
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }

template <class T, int N> struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <class T, int N> __device__ __forceinline__ Pack<T, N> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, N>*>(p);
}
template <class T, int N> __device__ __forceinline__ void store_pack(T* p, const Pack<T, N>& v) {
  *reinterpret_cast<Pack<T, N>*>(p) = v;
}

// Elements per 16-byte access for the widest of the given types (1 byte: 16, ..., 8 bytes: 2).
// Host side only (launchers choose the kernel instantiation with it).
template <class... Ts> inline constexpr int vec_width() {
  size_t w = 1;
  ((w = sizeof(Ts) > w ? sizeof(Ts) : w), ...);
  return static_cast<int>(16 / w);
}

// Index of the first element i >= 0 with p + i aligned for Pack<T, N> (p must be T-aligned).
template <class T> inline int64_t aligned_start(const T* p, int n_per_pack) {
  const uint64_t elem = reinterpret_cast<uintptr_t>(p) / sizeof(T);
  return static_cast<int64_t>((n_per_pack - elem % n_per_pack) % n_per_pack);
}
// Whether p + i is aligned for a pack of n_per_pack elements.
template <class T> inline bool pack_aligned(const T* p, int64_t i, int n_per_pack) {
  return (reinterpret_cast<uintptr_t>(p + i) % (sizeof(T) * static_cast<size_t>(n_per_pack))) == 0;
}

// How a kernel over n elements of several arrays (any element types) splits into packs of V: a
// scalar head until the first array is pack-aligned, packs while all are (they must reach
// alignment at the same element), then a scalar tail. Not vectorised (vector false, head 0,
// packs n with V = 1) when the arrays do not align together.
struct PackSplit {
  bool vector;
  int64_t head, packs;
};
template <int V, class P0, class... Ps> inline PackSplit pack_split(int64_t n, const P0* first, const Ps*... others) {
  int64_t head = aligned_start(first, V);
  if (head > n) head = n;
  const bool together = (pack_aligned(others, head, V) && ...);
  if (V == 1 || !together || n - head < V) return PackSplit{false, 0, n};
  return PackSplit{true, head, (n - head) / V};
}
// Element index of the k-th scalar element outside the packs [head, tail): the head, then the tail.
__device__ __forceinline__ int64_t edge_index(int64_t k, int64_t head, int64_t tail) {
  return k < head ? k : tail + (k - head);
}

}  // namespace seg::cuda::dev
