// Device-side helpers shared by the .cu files of families B (pool, resize, batchnorm, conv2d):
// storage types, f32 loads and stores, 16-byte channel packs, grid sizing. Included by .cu files only.
//
// Storage: the launchers take seg::f16 / seg::bf16 (kernels/common/half.h, bit-compatible with CUDA's
// __half / __nv_bfloat16); device_t<T> is the CUDA type and dev(p) reinterprets a pointer. Arithmetic
// is f32 whatever the storage (DESIGN decision 4): to_f32 widens, from_f32<D> rounds to nearest even.
//
// Packs: a thread that owns V consecutive channels loads them as one Pack<D, V> (16 bytes when
// V = kVec16<D>: 4 floats or 8 halves). Whether a launch may use packs is decided on the host
// (channels % V == 0 and every pointer 16-byte aligned, aligned16()); otherwise the same kernel runs
// with V = 1. Integer packs (argmax) of 8 elements are 32 bytes with 16-byte alignment: two stores.
//
// Rounding: nvcc contracts a*b + c into one fma by default, and so does g++ for C++ (the CPU twins
// and the simulator build, -ffp-contract=fast), each where its optimiser sees fit. Kernels follow the
// CPU's order of operations, so results agree to a few ulps per operation; where two computations
// of one value must agree exactly (an index derived from a float), they use __fmul_rn / __fadd_rn,
// which are never contracted.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <limits>
#include <string>

#include "kernels/common/half.h"
#include "kernels/cuda/launch_error.h"

// `SEG_UNROLL` for nvcc; g++ (the simulator build) spells it `#pragma GCC unroll` and warns on
// the CUDA spelling.
#if defined(__CUDACC__)
#define SEG_UNROLL _Pragma("unroll")
#else
#define SEG_UNROLL _Pragma("GCC unroll 16")
#endif

namespace seg::cuda {

template <class T> struct device_type { using type = T; };
template <> struct device_type<f16> { using type = __half; };
template <> struct device_type<bf16> { using type = __nv_bfloat16; };
template <class T> using device_t = typename device_type<T>::type;

template <class T> inline const device_t<T>* dev(const T* p) { return reinterpret_cast<const device_t<T>*>(p); }
template <class T> inline device_t<T>* dev(T* p) { return reinterpret_cast<device_t<T>*>(p); }

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class D> __device__ __forceinline__ D from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Elements of D in 16 bytes.
template <class D> constexpr int kVec16 = static_cast<int>(16 / sizeof(D));

template <class D, int N> struct alignas(sizeof(D) * N < 16 ? sizeof(D) * N : 16) Pack {
  D v[N];
};

// out[i] = p[i] as f32, i < N (one 16-byte load when N = kVec16<D>).
template <int N, class D> __device__ __forceinline__ void load_f32(const D* p, float (&out)[N]) {
  if constexpr (N == 1) {
    out[0] = to_f32(*p);
  } else {
    const Pack<D, N> pk = *reinterpret_cast<const Pack<D, N>*>(p);
SEG_UNROLL
    for (int i = 0; i < N; ++i) out[i] = to_f32(pk.v[i]);
  }
}
template <int N, class D> __device__ __forceinline__ void store_f32(D* p, const float (&in)[N]) {
  if constexpr (N == 1) {
    *p = from_f32<D>(in[0]);
  } else {
    Pack<D, N> pk;
SEG_UNROLL
    for (int i = 0; i < N; ++i) pk.v[i] = from_f32<D>(in[i]);
    *reinterpret_cast<Pack<D, N>*>(p) = pk;
  }
}
template <int N> __device__ __forceinline__ void load_i32(const int32_t* p, int32_t (&out)[N]) {
  if constexpr (N == 1) {
    out[0] = *p;
  } else {
    const Pack<int32_t, N> pk = *reinterpret_cast<const Pack<int32_t, N>*>(p);
SEG_UNROLL
    for (int i = 0; i < N; ++i) out[i] = pk.v[i];
  }
}
template <int N> __device__ __forceinline__ void store_i32(int32_t* p, const int32_t (&in)[N]) {
  if constexpr (N == 1) {
    *p = in[0];
  } else {
    Pack<int32_t, N> pk;
SEG_UNROLL
    for (int i = 0; i < N; ++i) pk.v[i] = in[i];
    *reinterpret_cast<Pack<int32_t, N>*>(p) = pk;
  }
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Threads per block of the element-wise (one thread per output element or channel pack) kernels.
constexpr int kThreads = 256;
// Grid of a grid-stride loop over `work` items: one thread per item up to 8192 blocks (2M threads,
// several waves of 132 SMs x 2048 resident threads); beyond that each thread loops. Depends on the
// shape only, so a launch is reproducible on any GPU.
inline unsigned grid_for(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 8192 ? 8192 : blocks));
}

// Kernels index with 32-bit integers (64-bit division costs ~10x more on the GPU). Tensors of 2^31
// elements or more are refused with a message instead of being indexed wrongly.
inline void require_int32(int64_t elements, const char* what) {
  if (elements > std::numeric_limits<int32_t>::max())
    throw LaunchError(std::string(what) + ": " + std::to_string(elements) +
                      " elements exceed the 2^31 - 1 that the CUDA kernels index; split the batch");
}

}  // namespace seg::cuda
