// The seam between an op and its kernels: one dispatch on (device, dtype) (DESIGN decision 13).
//
// An op body in layers/ is written once. Only its kernel calls are device-aware:
//
//   SEG_DISPATCH_DEVICE("relu", x, (DType::f32, DType::f64, DType::f16, DType::bf16),  // CPU dtypes
//                       (DType::f32, DType::f16, DType::bf16),                          // CUDA dtypes
//                       [&](auto dev, auto tag) {
//     using T = SEG_TYPE(tag);
//     SEG_KERNEL(dev, relu_forward<T>)(x.data<T>(), y.data<T>(), x.numel(), six);
//   });
//
// `dev` is CpuDevice{} or CudaDevice{index, stream}; SEG_KERNEL(dev, name<T>)(args...) calls
// seg::cpu::name<T>(args...) or seg::cuda::name<T>(args..., dev.stream): the two launcher headers
// kernels/cpu/<family>.h and kernels/cuda/<family>.h declare the same names with the same
// arguments, the CUDA ones with a trailing stream. Where the two backends genuinely differ (the CPU
// widens half to f32 for convolution, the GPU runs half natively), the lambda branches on
// `if constexpr (on_cuda(dev))`: still one op body.
//
// The CUDA branch exists only in builds with SEG_WITH_CUDA (the nvcc build and the simulated
// variants used by tests): elsewhere SEG_KERNEL is a plain CPU call and a CUDA tensor cannot exist.
// A dtype missing from a list, or the empty list SEG_NO_CUDA of an op whose CUDA kernel has not
// landed, is the usual Error(device) naming op, dtype and device (f64 is never in a CUDA list:
// DESIGN decision 4).
//
// A kernel launch that fails (seg::cuda::LaunchError from SEG_LAUNCH, which names the kernel and the
// launch site; in the simulator a KernelFault with its report) becomes Error(device) naming the op.
#pragma once

#include <type_traits>
#include <utility>

#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/cuda/stream.h"

namespace seg {

struct CpuDevice {
  static constexpr bool is_cuda = false;
};
struct CudaDevice {
  static constexpr bool is_cuda = true;
  int index = 0;
  cuda::Stream stream = nullptr;  // the device's current stream (core/stream.h)
};
template <class Dev>
constexpr bool on_cuda(const Dev&) {
  return std::decay_t<Dev>::is_cuda;
}

template <DType... Ds>
struct DTypeList {};

namespace detail {
// The CudaDevice tag of a CUDA device: makes it the thread's current device, takes its stream.
CudaDevice cuda_device_tag(Device device);
// Rethrows a seg::cuda::LaunchError (or any std::exception from a launcher) as Error(device).
[[noreturn]] void rethrow_kernel_failure(const char* op, Device device);
}  // namespace detail

template <DType... Cpu, DType... Cuda, class F>
void dispatch_device(const char* op, DType dt, Device dev, DTypeList<Cpu...>, DTypeList<Cuda...>, F&& fn) {
  if (dev.is_cpu()) {
    if constexpr (sizeof...(Cpu) == 0) {
      throw_missing_instantiation(op, dt, dev);
    } else {
      dispatch_dtype<Cpu...>(op, dt, dev, [&](auto tag) { fn(CpuDevice{}, tag); });
    }
    return;
  }
#ifdef SEG_WITH_CUDA
  if constexpr (sizeof...(Cuda) == 0) {
    throw_missing_instantiation(op, dt, dev);
  } else {
    const CudaDevice d = detail::cuda_device_tag(dev);
    dispatch_dtype<Cuda...>(op, dt, dev, [&](auto tag) {
      try {
        fn(d, tag);
      } catch (const Error&) {
        throw;
      } catch (const std::exception&) {
        detail::rethrow_kernel_failure(op, dev);
      }
    });
  }
#else
  throw_missing_instantiation(op, dt, dev);
#endif
}

}  // namespace seg

// SEG_DISPATCH_DEVICE(op, tensor, (CPU dtypes), (CUDA dtypes), [&](auto dev, auto tag) {...}):
// dispatches on tensor's device and dtype.
#define SEG_DISPATCH_DEVICE(OP, TENSOR, CPU_LIST, CUDA_LIST, ...)                                       \
  ::seg::dispatch_device(OP, (TENSOR).dtype(), (TENSOR).device(), ::seg::DTypeList<SEG_DTYPE_LIST CPU_LIST>{}, \
                         ::seg::DTypeList<SEG_DTYPE_LIST CUDA_LIST>{}, __VA_ARGS__)
// The same with an explicit dtype and device (ops whose compute dtype differs from a tensor's).
#define SEG_DISPATCH_DEVICE_AS(OP, DT, DEV, CPU_LIST, CUDA_LIST, ...)                            \
  ::seg::dispatch_device(OP, DT, DEV, ::seg::DTypeList<SEG_DTYPE_LIST CPU_LIST>{},               \
                         ::seg::DTypeList<SEG_DTYPE_LIST CUDA_LIST>{}, __VA_ARGS__)

// The dtype lists most ops use.
#define SEG_CPU_FLOAT_DTYPES (::seg::DType::f32, ::seg::DType::f64, ::seg::DType::f16, ::seg::DType::bf16)
#define SEG_CUDA_FLOAT_DTYPES (::seg::DType::f32, ::seg::DType::f16, ::seg::DType::bf16)
// An op whose CUDA kernel does not exist (yet): asking for it on a GPU is the op/dtype/device error.
#define SEG_NO_CUDA ()

// SEG_CUDA_ONLY(code): the code in CUDA builds, nothing elsewhere; for the CUDA branch of a dispatch
// lambda that has no CPU twin (a preprocessor #if cannot sit inside the macro's arguments):
//   SEG_CUDA_ONLY(if constexpr (on_cuda(dev)) { SEG_CUDA_KERNEL(dev, pixel_accuracy<T>)(...); } else)
//   { ... the CPU code ... }
#ifdef SEG_WITH_CUDA
#define SEG_CUDA_ONLY(...) __VA_ARGS__
#else
#define SEG_CUDA_ONLY(...)
#endif

// SEG_KERNEL(dev, name<T>)(args...): seg::cpu::name<T>(args...) or seg::cuda::name<T>(args..., stream).
#ifdef SEG_WITH_CUDA
#define SEG_KERNEL(DEV, ...)                                                                         \
  [&](auto&&... seg_kernel_args) -> decltype(auto) {                                                 \
    if constexpr (std::decay_t<decltype(DEV)>::is_cuda)                                              \
      return ::seg::cuda::__VA_ARGS__(std::forward<decltype(seg_kernel_args)>(seg_kernel_args)...,   \
                                      (DEV).stream);                                                 \
    else                                                                                             \
      return ::seg::cpu::__VA_ARGS__(std::forward<decltype(seg_kernel_args)>(seg_kernel_args)...);   \
  }
// SEG_KERNEL_WS(dev, workspace, name<T>)(args...): the same for a kernel whose CUDA launcher also
// takes scratch memory (its `*_workspace_bytes()`): seg::cuda::name<T>(args..., workspace, stream)
// or seg::cpu::name<T>(args...). The workspace expression is evaluated on CUDA only.
#define SEG_KERNEL_WS(DEV, WS, ...)                                                                  \
  [&](auto&&... seg_kernel_args) -> decltype(auto) {                                                 \
    if constexpr (std::decay_t<decltype(DEV)>::is_cuda)                                              \
      return ::seg::cuda::__VA_ARGS__(std::forward<decltype(seg_kernel_args)>(seg_kernel_args)...,   \
                                      (WS), (DEV).stream);                                           \
    else                                                                                             \
      return ::seg::cpu::__VA_ARGS__(std::forward<decltype(seg_kernel_args)>(seg_kernel_args)...);   \
  }
// SEG_CUDA_KERNEL(dev, name<T>)(args...): seg::cuda::name<T>(args..., stream), inside an
// `if constexpr (on_cuda(dev))` branch, for a CUDA launcher without a CPU twin of that name
// (a device-side scale, a count written to device memory).
#define SEG_CUDA_KERNEL(DEV, ...)                                                                    \
  [&](auto&&... seg_kernel_args) -> decltype(auto) {                                                 \
    return ::seg::cuda::__VA_ARGS__(std::forward<decltype(seg_kernel_args)>(seg_kernel_args)...,     \
                                    (DEV).stream);                                                   \
  }
#else
#define SEG_KERNEL(DEV, ...) ::seg::cpu::__VA_ARGS__
#define SEG_KERNEL_WS(DEV, WS, ...) ::seg::cpu::__VA_ARGS__
#endif
// SEG_CPU_KERNEL(dev, name<T>)(args...): the CPU kernel of an op listed with SEG_NO_CUDA (its CUDA
// launcher has not landed, so the CUDA branch is never instantiated and never named).
#define SEG_CPU_KERNEL(DEV, ...) ::seg::cpu::__VA_ARGS__
