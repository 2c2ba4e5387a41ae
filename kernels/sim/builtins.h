// CUDA's built-in variables for simulated kernels: threadIdx, blockIdx, blockDim, gridDim, warpSize.
//
// They are thread_local: the scheduler writes threadIdx before every switch to a simulated thread
// (all threads of a block share one OS thread), and blockIdx/blockDim/gridDim per block. Blocks
// running on worker threads therefore see their own values. The types are CUDA's own (uint3, dim3
// from vector_types.h). Unlike under nvcc they are writable; nvcc rejects such code, and CI compiles
// every .cu file with nvcc too.
#pragma once

#include <cuda_runtime.h>

inline thread_local uint3 threadIdx{0, 0, 0};
inline thread_local uint3 blockIdx{0, 0, 0};
inline thread_local dim3 blockDim{1, 1, 1};
inline thread_local dim3 gridDim{1, 1, 1};
constexpr int warpSize = 32;
