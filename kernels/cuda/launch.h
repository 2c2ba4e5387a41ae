// SEG_LAUNCH: the one way the project launches a kernel (DESIGN decision 3).
//
//   SEG_LAUNCH(kernel, grid, block, dynamic_smem_bytes, stream, args...);
//
// grid and block are dim3 (or integers), dynamic_smem_bytes is what seg::dynamic_smem<T>() may use
// (kernels/cuda/dynamic_smem.h), stream a cudaStream_t (0 for the default stream). The arguments
// are converted to the kernel's parameter types as in a `<<<>>>` launch; their number is checked at
// compile time. A template kernel with several template arguments needs parentheses because of
// the commas: SEG_LAUNCH((gemm<float, 64>), grid, block, 0, stream, a, b, c).
//
// Under nvcc it is `kernel<<<grid, block, smem, stream>>>(args...)` followed by cudaGetLastError();
// a launch error (bad configuration, too much shared memory, no kernel image for this GPU) throws
// seg::cuda::LaunchError naming the kernel and the launch site. Errors that happen while the kernel
// runs surface later, at the next synchronising call, as with any CUDA launch.
// In the simulator build (g++, SEG_CUDA_SIM) the launch is queued on its stream, as on a GPU, and
// runs on the CPU when the host synchronises with it. A bad configuration throws
// seg::sim::KernelFault (a LaunchError) at the call; a fault the simulator finds while the kernel
// runs (deadlock, divergent collective, ...) is thrown by the next synchronising call or launch
// (SEG_SIM_SYNC_LAUNCH=1: by the launch itself). See docs/cuda-simulator.md.
#pragma once

#include <cuda_runtime.h>

#include "kernels/cuda/launch_error.h"

#if defined(SEG_CUDA_SIM)

#include "kernels/sim/launch.h"

#define SEG_LAUNCH(kernel, grid, block, dynamic_smem_bytes, stream, ...)                   \
  ::seg::sim::launch(#kernel, __FILE__, __LINE__, kernel, grid, block, dynamic_smem_bytes, \
                     stream __VA_OPT__(, ) __VA_ARGS__)

#elif defined(__CUDACC__)

#include <string>
#include <utility>

namespace seg::cuda::detail {

template <class... Params, class... Args>
void launch_checked(const char* kernel_name, const char* file, int line, void (*kernel)(Params...), dim3 grid,
                    dim3 block, size_t dynamic_smem_bytes, cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "SEG_LAUNCH: the number of arguments does not match the kernel");
  // clang-format off
  kernel<<<grid, block, dynamic_smem_bytes, stream>>>(std::forward<Args>(args)...);
  // clang-format on
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw LaunchError(std::string("CUDA launch of ") + kernel_name + " at " + file + ":" + std::to_string(line) +
                      " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + "); grid (" +
                      std::to_string(grid.x) + "," + std::to_string(grid.y) + "," + std::to_string(grid.z) +
                      "), block (" + std::to_string(block.x) + "," + std::to_string(block.y) + "," +
                      std::to_string(block.z) + "), " + std::to_string(dynamic_smem_bytes) +
                      " B dynamic shared memory");
  }
}

}  // namespace seg::cuda::detail

#define SEG_LAUNCH(kernel, grid, block, dynamic_smem_bytes, stream, ...)                                    \
  ::seg::cuda::detail::launch_checked(#kernel, __FILE__, __LINE__, kernel, grid, block, dynamic_smem_bytes, \
                                      stream __VA_OPT__(, ) __VA_ARGS__)

#else
#error "kernels/cuda/launch.h is included by .cu files only (nvcc, or g++ with the simulator)"
#endif
