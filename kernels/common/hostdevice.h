// SEG_HD marks math that both the CPU kernels and the CUDA kernels call (DESIGN decision 3).
//
// Under nvcc it expands to __host__ __device__; under the CUDA simulator (kernels/sim) the same
// qualifiers exist but are empty; in a plain g++ build without the CUDA toolkit it is empty too.
// Headers in kernels/common must therefore compile with no CUDA header in sight.
#pragma once

#if defined(__CUDACC__) || defined(SEG_CUDA_SIM)
#define SEG_HD __host__ __device__
#define SEG_HD_INLINE __host__ __device__ __forceinline__
#else
#define SEG_HD
#define SEG_HD_INLINE inline
#endif
