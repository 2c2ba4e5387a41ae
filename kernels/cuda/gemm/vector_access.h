// 8- and 16-byte accesses of the tensor-core kernels (shared-memory staging, vectorised global
// stores) as single instructions in both builds.
//
// Under nvcc `*reinterpret_cast<float4*>(p) = v` is one st.v4 (16 bytes). g++, building the same
// code for the simulator, splits a store of a float4 or uint4 assembled from scalars into four
// 4-byte stores, and the simulator's counters (kernels/sim/counters.h) would then report four
// strided requests with bank conflicts that the GPU never has. A fixed-size memcpy is one 16-byte
// access for g++ (and counted as such); nvcc keeps the typed access, whose alignment it knows.
// The same bits move either way: only what the counters see differs.
#pragma once

#include <cstdint>
#include <cstring>

namespace seg::cuda::tc {

template <class V>
__device__ __forceinline__ void store_vec(void* dst, const V& v) {
#if defined(SEG_CUDA_SIM)
  std::memcpy(dst, &v, sizeof v);
#else
  *static_cast<V*>(dst) = v;
#endif
}

template <class V>
__device__ __forceinline__ V load_vec(const void* src) {
#if defined(SEG_CUDA_SIM)
  V v;
  std::memcpy(&v, src, sizeof v);
  return v;
#else
  return *static_cast<const V*>(src);
#endif
}

}  // namespace seg::cuda::tc
