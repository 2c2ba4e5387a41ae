// seg::sim::launch: what SEG_LAUNCH (kernels/cuda/launch.h) expands to in the simulator build.
//
// The launch is synchronous: it returns when every block has run, whatever the stream (streams and
// events are synchronous too, runtime_api.cpp). Checks, with the runtime's own error names:
//   * grid and block dimensions against sm_90 limits (block <= 1024 threads, x/y <= 1024, z <= 64;
//     grid x < 2^31, y and z <= 65535), none zero;
//   * dynamic shared memory <= 48 KiB, or up to 227 KiB after
//     cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
//   * the argument count (at compile time) against the kernel's parameters.
// Each simulated thread calls the kernel with its own copies of the arguments, converted to the
// parameter types once, as `<<<>>>` does. A fault found while running throws seg::sim::KernelFault
// (sim.h) with the report; the launch is then abandoned (later blocks do not run).
// Not simulated: __launch_bounds__ (dropped), register and static shared memory limits, clusters,
// cooperative launches, launches from inside a kernel.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/sim/sim.h"

namespace seg::sim {

namespace detail {

// Runs the kernel body for the calling simulated thread.
class KernelInvoker {
 public:
  virtual void run_thread() const = 0;
  // The bytes of this object (the kernel pointer and the stored arguments): kernel code reads the
  // arguments from here, which the pointer checks accept as the kernel's parameter space.
  virtual size_t storage_bytes() const = 0;

 protected:
  ~KernelInvoker() = default;
};

struct LaunchRequest {
  const char* kernel_name;
  const char* file;  // the SEG_LAUNCH site
  int line;
  const void* kernel;  // identifies the kernel for cudaFuncSetAttribute
  dim3 grid, block;
  size_t dynamic_smem;
  cudaStream_t stream;
  const KernelInvoker* invoker;
};

void run_launch(const LaunchRequest& request);

template <class... Params>
class Invoker final : public KernelInvoker {
 public:
  template <class... Args>
  explicit Invoker(void (*kernel)(Params...), Args&&... args) : kernel_(kernel), params_(std::forward<Args>(args)...) {}
  // std::apply copies each stored argument into the kernel's by-value parameters: every simulated
  // thread gets its own copies, which it may modify.
  void run_thread() const override { std::apply(kernel_, params_); }
  size_t storage_bytes() const override { return sizeof *this; }

 private:
  void (*kernel_)(Params...);
  std::tuple<std::decay_t<Params>...> params_;
};

}  // namespace detail

template <class... Params, class... Args>
void launch(const char* kernel_name, const char* file, int line, void (*kernel)(Params...), dim3 grid, dim3 block,
            size_t dynamic_smem_bytes, cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "SEG_LAUNCH: the number of arguments does not match the kernel");
  const detail::Invoker<Params...> invoker(kernel, std::forward<Args>(args)...);
  detail::run_launch({kernel_name, file, line, reinterpret_cast<const void*>(kernel), grid, block, dynamic_smem_bytes,
                      stream, &invoker});
}

}  // namespace seg::sim
