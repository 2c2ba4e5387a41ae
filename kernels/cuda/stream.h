// The stream type of the CUDA launchers, declared without any CUDA header.
//
// kernels/cuda/<family>.h are plain C++ headers that layers/ includes in every build (DESIGN
// decision 13): they mirror kernels/cpu/<family>.h and add a trailing stream. CUDA's own
// cudaStream_t is `struct CUstream_st*`; repeating that declaration here is the same type, so a
// launcher declared with seg::cuda::Stream accepts a cudaStream_t and the other way round.
#pragma once

struct CUstream_st;

namespace seg::cuda {

using Stream = CUstream_st*;

}  // namespace seg::cuda
