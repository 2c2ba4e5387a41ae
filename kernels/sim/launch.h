// seg::sim::launch: what SEG_LAUNCH (kernels/cuda/launch.h) expands to in the simulator build.
//
// A launch is queued on its stream, as on a GPU: SEG_LAUNCH checks the launch, copies the
// arguments (converted to the kernel's parameter types, as `<<<>>>` does) and returns; the kernel
// runs when the host synchronises with that work (stream_executor.h). Checks made at the call,
// thrown as seg::sim::KernelFault with the runtime's own error names:
//   * grid and block dimensions against sm_90 limits (block <= 1024 threads, x/y <= 1024, z <= 64;
//     grid x < 2^31, y and z <= 65535), none zero;
//   * dynamic shared memory <= 48 KiB, or up to 227 KiB after
//     cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
//   * the stream: a live stream of the current device, not invalidated by a stream capture;
//   * the argument count (at compile time) against the kernel's parameters.
// A fault found while the kernel runs (deadlock, out-of-bounds write, a pointer into another
// device's memory without peer access, ...) is thrown by the next synchronising call or launch
// (sim.h, KernelFault); SEG_SIM_SYNC_LAUNCH=1 runs every launch at the call instead.
// Each simulated thread calls the kernel with its own copies of the arguments.
// Not simulated: __launch_bounds__ (dropped), register and static shared memory limits, clusters,
// cooperative launches, launches from inside a kernel.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/sim/sim.h"

namespace seg::sim {

namespace detail {

// A pointer argument of a launch, as the race detector and the peer-access check see it: the
// pointee's constness decides whether the kernel may write through it.
struct PointerArgument {
  const void* pointer;
  bool read_only;  // the parameter points to const
  unsigned index;  // position in the kernel's parameter list
};

// Runs the kernel body for the calling simulated thread.
class KernelInvoker {
 public:
  virtual ~KernelInvoker() = default;
  virtual void run_thread() const = 0;
  // The arguments of pointer type (pointers inside structs passed by value are not seen).
  virtual void pointer_arguments(std::vector<PointerArgument>& out) const = 0;
  // The bytes of this object (the kernel pointer and the stored arguments): kernel code reads the
  // arguments from here, which the pointer checks accept as the kernel's parameter space.
  virtual size_t storage_bytes() const = 0;
};

struct LaunchRequest {
  const char* kernel_name;
  const char* file;  // the SEG_LAUNCH site
  int line;
  const void* kernel;  // identifies the kernel for cudaFuncSetAttribute
  dim3 grid, block;
  size_t dynamic_smem;
  cudaStream_t stream;
  std::unique_ptr<const KernelInvoker> invoker;  // owns the argument copies (graphs replay them)
};

// Where a queued launch runs: its device and the devices whose memory it may touch (itself and
// the peers whose access was enabled when it started). Read by the per-access checks
// (access_check.cpp), which fault on an access to any other device's memory.
struct LaunchContext {
  int device = 0;
  uint64_t accessible_devices = 1;  // bit d: device d
  // Record the exact global byte ranges the kernel touches, for the stream race detector (only
  // where kernel code is instrumented: the default build).
  bool record_accesses = false;
};

// Checks the launch and queues it on its stream (stream_executor.cpp).
void enqueue_launch(std::shared_ptr<const LaunchRequest> request);
// Throws KernelFault(launch_config) when the grid, block or shared memory request is invalid.
void validate_launch(const LaunchRequest& request);

template <class... Params>
class Invoker final : public KernelInvoker {
 public:
  template <class... Args>
  explicit Invoker(void (*kernel)(Params...), Args&&... args) : kernel_(kernel), params_(std::forward<Args>(args)...) {}
  // std::apply copies each stored argument into the kernel's by-value parameters: every simulated
  // thread gets its own copies, which it may modify.
  void run_thread() const override { std::apply(kernel_, params_); }
  void pointer_arguments(std::vector<PointerArgument>& out) const override {
    collect(out, std::index_sequence_for<Params...>{});
  }
  size_t storage_bytes() const override { return sizeof *this; }

 private:
  template <size_t... I>
  void collect(std::vector<PointerArgument>& out, std::index_sequence<I...>) const {
    (add<I>(out), ...);
  }
  template <size_t I>
  void add(std::vector<PointerArgument>& out) const {
    using T = std::tuple_element_t<I, std::tuple<std::decay_t<Params>...>>;
    if constexpr (std::is_pointer_v<T> && !std::is_function_v<std::remove_pointer_t<T>>)
      out.push_back({static_cast<const void*>(std::get<I>(params_)), std::is_const_v<std::remove_pointer_t<T>>,
                     static_cast<unsigned>(I)});
  }

  void (*kernel_)(Params...);
  std::tuple<std::decay_t<Params>...> params_;
};

}  // namespace detail

template <class... Params, class... Args>
void launch(const char* kernel_name, const char* file, int line, void (*kernel)(Params...), dim3 grid, dim3 block,
            size_t dynamic_smem_bytes, cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "SEG_LAUNCH: the number of arguments does not match the kernel");
  auto request = std::make_shared<detail::LaunchRequest>();
  request->kernel_name = kernel_name;
  request->file = file;
  request->line = line;
  request->kernel = reinterpret_cast<const void*>(kernel);
  request->grid = grid;
  request->block = block;
  request->dynamic_smem = dynamic_smem_bytes;
  request->stream = stream;
  request->invoker = std::make_unique<const detail::Invoker<Params...>>(kernel, std::forward<Args>(args)...);
  detail::enqueue_launch(std::move(request));
}

}  // namespace seg::sim
