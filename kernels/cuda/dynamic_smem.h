// seg::dynamic_smem<T>(): the project's one way to reach dynamic shared memory (DESIGN decision 3).
//
//   float* partial = seg::dynamic_smem<float>();                      // bytes [0, ...)
//   __half* tile   = seg::dynamic_smem<__half>(64 * sizeof(float));   // bytes [256, ...)
//
// The size is the dynamic_smem_bytes argument of SEG_LAUNCH. The buffer starts 128-byte aligned;
// byte_offset must be a multiple of alignof(T). Under nvcc every call refers to the single symbol
// `seg_dynamic_smem` (one `extern __shared__` name for the whole project, so no two declarations
// ever disagree on its type). In the simulator the buffer ends at a guard page: accesses past the
// launched size fault with a message, and an offset past it or misaligned is reported at once.
#pragma once

#include <cstddef>

#if defined(SEG_CUDA_SIM)

#include <source_location>

#include "kernels/sim/device_runtime.h"

namespace seg {
template <class T>
inline T* dynamic_smem(size_t byte_offset = 0, const std::source_location& where = std::source_location::current()) {
  return static_cast<T*>(sim::detail::dynamic_smem(alignof(T), byte_offset, where));
}
}  // namespace seg

#elif defined(__CUDACC__)

namespace seg {
template <class T>
__device__ __forceinline__ T* dynamic_smem(size_t byte_offset = 0) {
  extern __shared__ __align__(128) unsigned char seg_dynamic_smem[];
  return reinterpret_cast<T*>(seg_dynamic_smem + byte_offset);
}
}  // namespace seg

#else
#error "kernels/cuda/dynamic_smem.h is included by .cu files only (nvcc, or g++ with the simulator)"
#endif
