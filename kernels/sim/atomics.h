// Atomic functions for simulated kernels (atomicAdd, atomicCAS, ...), on GCC's __atomic builtins.
//
// Relaxed ordering, as CUDA's atomics have. They are real atomics, so they stay correct when
// blocks run on parallel workers, and TSan understands them (an atomic and a plain access to the
// same word are still a race). Floating-point adds are compare-and-swap loops; their result can
// depend on the order of blocks when workers run in parallel, as on a GPU. The _block and _system
// scopes map to the same functions. Covered: Add, Sub, Exch, Min, Max, Inc, Dec, And, Or, Xor, CAS
// for the types CUDA offers on sm_90 (int, unsigned, unsigned long long, long long for min/max,
// float, double, __half, __nv_bfloat16, __half2, __nv_bfloat162 for add; unsigned short for CAS).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace seg::sim::detail {

template <class T, class F>
T atomic_update(T* address, F f) {
  T old;
  __atomic_load(address, &old, __ATOMIC_RELAXED);
  T desired;
  do {
    desired = f(old);
  } while (!__atomic_compare_exchange(address, &old, &desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}

}  // namespace seg::sim::detail

#define SEG_SIM_ATOMIC_FETCH(name, builtin, T) \
  inline T name(T* address, T value) { return builtin(address, value, __ATOMIC_RELAXED); }

SEG_SIM_ATOMIC_FETCH(atomicAdd, __atomic_fetch_add, int)
SEG_SIM_ATOMIC_FETCH(atomicAdd, __atomic_fetch_add, unsigned int)
SEG_SIM_ATOMIC_FETCH(atomicAdd, __atomic_fetch_add, unsigned long long)
SEG_SIM_ATOMIC_FETCH(atomicSub, __atomic_fetch_sub, int)
SEG_SIM_ATOMIC_FETCH(atomicSub, __atomic_fetch_sub, unsigned int)
SEG_SIM_ATOMIC_FETCH(atomicAnd, __atomic_fetch_and, int)
SEG_SIM_ATOMIC_FETCH(atomicAnd, __atomic_fetch_and, unsigned int)
SEG_SIM_ATOMIC_FETCH(atomicAnd, __atomic_fetch_and, unsigned long long)
SEG_SIM_ATOMIC_FETCH(atomicOr, __atomic_fetch_or, int)
SEG_SIM_ATOMIC_FETCH(atomicOr, __atomic_fetch_or, unsigned int)
SEG_SIM_ATOMIC_FETCH(atomicOr, __atomic_fetch_or, unsigned long long)
SEG_SIM_ATOMIC_FETCH(atomicXor, __atomic_fetch_xor, int)
SEG_SIM_ATOMIC_FETCH(atomicXor, __atomic_fetch_xor, unsigned int)
SEG_SIM_ATOMIC_FETCH(atomicXor, __atomic_fetch_xor, unsigned long long)
SEG_SIM_ATOMIC_FETCH(atomicExch, __atomic_exchange_n, int)
SEG_SIM_ATOMIC_FETCH(atomicExch, __atomic_exchange_n, unsigned int)
SEG_SIM_ATOMIC_FETCH(atomicExch, __atomic_exchange_n, unsigned long long)
#undef SEG_SIM_ATOMIC_FETCH

inline float atomicExch(float* address, float value) {
  float old;
  __atomic_exchange(address, &value, &old, __ATOMIC_RELAXED);
  return old;
}

#define SEG_SIM_ATOMIC_MINMAX(T)                                                   \
  inline T atomicMin(T* a, T v) {                                                  \
    return seg::sim::detail::atomic_update(a, [v](T x) { return v < x ? v : x; }); \
  }                                                                                \
  inline T atomicMax(T* a, T v) {                                                  \
    return seg::sim::detail::atomic_update(a, [v](T x) { return v > x ? v : x; }); \
  }
SEG_SIM_ATOMIC_MINMAX(int)
SEG_SIM_ATOMIC_MINMAX(unsigned int)
SEG_SIM_ATOMIC_MINMAX(long long)
SEG_SIM_ATOMIC_MINMAX(unsigned long long)
#undef SEG_SIM_ATOMIC_MINMAX

// ((old >= limit) ? 0 : old + 1) and (((old == 0) || (old > limit)) ? limit : old - 1), as documented.
inline unsigned int atomicInc(unsigned int* a, unsigned int limit) {
  return seg::sim::detail::atomic_update(a, [limit](unsigned x) { return x >= limit ? 0u : x + 1u; });
}
inline unsigned int atomicDec(unsigned int* a, unsigned int limit) {
  return seg::sim::detail::atomic_update(a, [limit](unsigned x) { return (x == 0 || x > limit) ? limit : x - 1u; });
}

#define SEG_SIM_ATOMIC_CAS(T)                                                                         \
  inline T atomicCAS(T* address, T compare, T value) {                                                \
    __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
    return compare;                                                                                   \
  }
SEG_SIM_ATOMIC_CAS(int)
SEG_SIM_ATOMIC_CAS(unsigned int)
SEG_SIM_ATOMIC_CAS(unsigned long long)
SEG_SIM_ATOMIC_CAS(unsigned short)
#undef SEG_SIM_ATOMIC_CAS

inline float atomicAdd(float* a, float v) {
  return seg::sim::detail::atomic_update(a, [v](float x) { return x + v; });
}
inline double atomicAdd(double* a, double v) {
  return seg::sim::detail::atomic_update(a, [v](double x) { return x + v; });
}
inline __half atomicAdd(__half* a, __half v) {
  return seg::sim::detail::atomic_update(a, [v](__half x) { return __hadd(x, v); });
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* a, __nv_bfloat16 v) {
  return seg::sim::detail::atomic_update(a, [v](__nv_bfloat16 x) { return __hadd(x, v); });
}
inline __half2 atomicAdd(__half2* a, __half2 v) {
  return seg::sim::detail::atomic_update(a, [v](__half2 x) { return __hadd2(x, v); });
}
inline __nv_bfloat162 atomicAdd(__nv_bfloat162* a, __nv_bfloat162 v) {
  return seg::sim::detail::atomic_update(a, [v](__nv_bfloat162 x) { return __hadd2(x, v); });
}
inline float atomicSub(float* a, float v) { return atomicAdd(a, -v); }

// Scoped variants: one simulated device, one memory, so every scope behaves the same.
template <class T, class... A>
inline auto atomicAdd_block(T* a, A... v) {
  return atomicAdd(a, v...);
}
template <class T, class... A>
inline auto atomicAdd_system(T* a, A... v) {
  return atomicAdd(a, v...);
}
template <class T, class... A>
inline auto atomicMax_block(T* a, A... v) {
  return atomicMax(a, v...);
}
template <class T, class... A>
inline auto atomicMin_block(T* a, A... v) {
  return atomicMin(a, v...);
}
template <class T, class... A>
inline auto atomicExch_block(T* a, A... v) {
  return atomicExch(a, v...);
}
template <class T, class... A>
inline auto atomicCAS_block(T* a, A... v) {
  return atomicCAS(a, v...);
}
