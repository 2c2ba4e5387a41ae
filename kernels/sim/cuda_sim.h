// The CUDA simulator's front door: g++ compiles every .cu file of the project with
//     -x c++ -include kernels/sim/cuda_sim.h -DSEG_CUDA_SIM=1
// so that the same CUDA C++ source nvcc compiles for the GPU runs on the CPU (DESIGN decision 3;
// user guide: docs/cuda-simulator.md). Kernel files need no #ifdef of their own; what differs is
// confined to kernels/cuda/launch.h (SEG_LAUNCH), kernels/cuda/dynamic_smem.h and kernels/cuda/ptx.h.
//
// What each header emulates, and its limits, is written at its top:
//   qualifiers.h    __global__, __device__, __shared__, __launch_bounds__ (CUDA's own headers)
//   builtins.h      threadIdx, blockIdx, blockDim, gridDim, warpSize
//   sync.h          __syncthreads (+ count/and/or), fences, __nanosleep, clock64, __trap
//   warp.h          __shfl*_sync, __ballot/any/all/uni_sync, __match_*_sync, __reduce_*_sync, __syncwarp
//   atomics.h       atomicAdd and friends
//   intrinsics.h    math and bit intrinsics, min/max, __ldg and cache-hinted loads/stores
//   half_extras.h   __half/__nv_bfloat16 functions CUDA's headers keep device-only
//   wmma.h          nvcuda::wmma (every lane holds the whole tile)
//   ptx_emulation.h ldmatrix, mma.sync m16n8k16, cp.async, behind kernels/cuda/ptx.h
//   launch.h        seg::sim::launch, what SEG_LAUNCH calls (queues the launch on its stream)
//   sim.h           options (schedules, workers, strict mode, stream modes), devices, statistics,
//                   the race detector's counters, KernelFault
//   runtime_templates.h  the runtime API's C++ overloads that cuda_runtime.h keeps for nvcc
// The runtime API (cudaMalloc, cudaMemcpy, streams, events, devices, graphs, ...) is CUDA's own
// declarations with definitions in runtime_*.cpp: work is queued on streams and run by the stream
// executor (stream_executor.h) when the host synchronises, as a GPU runs it asynchronously.
//
// The simulator accepts code nvcc rejects (shuffles of any type, writable threadIdx, missing
// includes); CI therefore also compiles every .cu file with nvcc for sm_80 and sm_90.
#pragma once

#if defined(__CUDACC__)
#error "kernels/sim/cuda_sim.h is for the g++ simulator build; nvcc compiles .cu files for the GPU"
#endif

#include "kernels/sim/qualifiers.h"
// qualifiers.h first: it redefines __shared__ before any kernel code is seen.
#include "kernels/sim/atomics.h"
#include "kernels/sim/builtins.h"
#include "kernels/sim/half_extras.h"
#include "kernels/sim/intrinsics.h"
#include "kernels/sim/launch.h"
#include "kernels/sim/ptx_emulation.h"
#include "kernels/sim/runtime_templates.h"
#include "kernels/sim/sim.h"
#include "kernels/sim/sync.h"
#include "kernels/sim/warp.h"
#include "kernels/sim/wmma.h"

// A gap after the static __shared__ arrays of this .cu file, for the pointer checks
// (access_check.cpp): g++ lays out a file's thread_locals in reverse order of definition, so this
// one, defined before any kernel, ends up after the file's arrays, and an access that runs off the
// end of the last of them lands here instead of in the next file's array. Never touched otherwise.
namespace seg::sim::detail {
namespace {
[[maybe_unused]] __attribute__((used)) thread_local char shared_redzone[256];
}  // namespace
}  // namespace seg::sim::detail
