// Memory of the simulator's runtime API: allocation (cudaMalloc[Async|Managed|Host], cudaHostAlloc,
// cudaHostRegister), freeing (cudaFree[Async|Host]), copies (cudaMemcpy[2D][Async],
// cudaMemcpyPeer[Async], symbol copies) and memsets (cudaMemset[2D][Async]).
//
// Copies and memsets are queued on a stream (the synchronous ones on the legacy default stream)
// and run in stream order. When the host waits, as the runtime documents ("API synchronization
// behavior"):
//   * cudaMemcpy / cudaMemcpy2D / cudaMemcpyPeer / symbol copies involving host memory return when
//     the copy is done (the runtime allows a pageable-to-device cudaMemcpy to return while its DMA
//     is still in flight; the simulator treats it as done, the behaviour code relies on);
//     device-to-device ones do not wait;
//   * cudaMemcpyAsync from pageable host memory copies the source into a staging buffer at the call,
//     so the host may reuse it at once: a later host write is not seen by the copy. From or to
//     pinned memory (cudaMallocHost, cudaHostAlloc, cudaHostRegister) it is a DMA that happens when
//     the stream gets to it: host writes to the source before the stream is synchronised ARE seen,
//     and the destination holds the old bytes until then -- the bug of reusing a pinned staging
//     buffer too early shows up as wrong data;
//   * cudaMemcpyAsync to pageable host memory, and between two host buffers, is synchronous;
//   * cudaMemset[2D] is asynchronous (except on pinned host memory), cudaMemsetAsync always;
//   * cudaFree and cudaFreeHost wait for all queued work first (the runtime synchronises); they
//     never throw the KernelFault of that work, which the next synchronising call throws.
// Checked as the runtime does: device ranges inside one allocation, cudaFree of unknown pointers,
// copy kinds that do not match the pointers, per-device capacity (80 GiB), calls forbidden during
// a stream capture (runtime_graphs.cpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/stream_executor.h"
#include "kernels/sim/stream_ops.h"

namespace seg::sim::detail {

cudaError_t set_last_error(cudaError_t e);  // runtime_api.cpp
void install_segv_handler();                // signals.cpp: explains host dereferences of device memory

namespace {

bool is_device(const void* p, size_t n) {
  MemoryKind kind;
  return inside_allocation(p, n, &kind) && kind != MemoryKind::pinned_host;
}

cudaError_t allocate(void** p, size_t bytes, MemoryKind kind, int device, const void* caller, bool stream_ordered) {
  if (!p) return set_last_error(cudaErrorInvalidValue);
  *p = nullptr;
  Lock lock = runtime_lock();
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  if (!stream_ordered)
    if (const cudaError_t e = check_unsafe_call(); e != cudaSuccess) return set_last_error(e);
  lock.unlock();
  install_segv_handler();
  apply_host_access_policy();
  if (kind != MemoryKind::pinned_host && allocated_device_bytes(device) + bytes > device_memory_capacity())
    return set_last_error(cudaErrorMemoryAllocation);
  *p = allocate_memory(bytes, kind, device, caller);
  if (!*p) return set_last_error(cudaErrorMemoryAllocation);
  forget_freed(reinterpret_cast<uintptr_t>(*p), bytes);
  return cudaSuccess;
}

// Checks the device side(s) of a copy against the allocations. cudaMemcpyDefault infers the
// direction from the pointers (unified addressing), as the runtime does.
cudaError_t check_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (!dst || !src) return cudaErrorInvalidValue;
  switch (kind) {
    case cudaMemcpyHostToHost:
      return cudaSuccess;
    case cudaMemcpyHostToDevice:
      return is_device(dst, count) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost:
      return is_device(src, count) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice:
      return is_device(dst, count) && is_device(src, count) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDefault: {
      // A pointer that starts inside an allocation must have the whole range inside it.
      if (inside_allocation(dst, 1) && !inside_allocation(dst, count)) return cudaErrorInvalidValue;
      if (inside_allocation(src, 1) && !inside_allocation(src, count)) return cudaErrorInvalidValue;
      return cudaSuccess;
    }
  }
  return cudaErrorInvalidMemcpyDirection;
}

bool host_side(Space s) { return s == Space::pageable || s == Space::pinned; }

struct CopyRequest {
  void* dst;
  size_t dpitch;
  const void* src;
  size_t spitch, width, height;
  cudaMemcpyKind kind;
  cudaStream_t stream;
  bool async;
  const char* api;
  const void* caller;
  bool to_symbol = false, from_symbol = false;
};

// Queues a validated copy and waits for it when the runtime would.
cudaError_t queue_copy(const CopyRequest& r) {
  Lock lock = runtime_lock();
  HostThread& h = host_thread();
  if (h.in_host_function) return cudaErrorNotPermitted;
  CUstream_st* s = r.async ? resolve_stream(r.stream) : resolve_stream(cudaStreamLegacy);
  if (!s) return cudaErrorInvalidResourceHandle;
  if (!r.async)
    if (const cudaError_t e = check_unsafe_call(); e != cudaSuccess) return e;
  const bool capturing = s->capture != nullptr;
  CopySpec spec;
  spec.dst = r.dst;
  spec.src = r.src;
  spec.dpitch = r.dpitch;
  spec.spitch = r.spitch;
  spec.width = r.width;
  spec.height = r.height;
  spec.dst_space = r.to_symbol ? Space::symbol : space_of(r.dst);
  spec.src_space = r.from_symbol ? Space::symbol : space_of(r.src);
  spec.api = r.api;
  spec.caller = r.caller;
  if (spec.src_space == Space::pageable && !capturing) {
    // The runtime's staging buffer: the source is read now, rows packed.
    auto staged = std::make_shared<std::vector<unsigned char>>(r.width * r.height);
    for (size_t row = 0; row < r.height; ++row)
      std::memcpy(staged->data() + row * r.width, static_cast<const unsigned char*>(r.src) + row * r.spitch, r.width);
    spec.staged = std::move(staged);
  }
  bool wait = false;
  if (!capturing) {
    const bool host_dst = host_side(spec.dst_space), host_src = host_side(spec.src_space);
    wait = r.async ? (spec.dst_space == Space::pageable || (host_dst && host_src)) : (host_dst || host_src);
  }
  OpPtr op = make_copy_op(spec);
  if (const cudaError_t e = submit(*s, op); e != cudaSuccess) return e;
  if (wait) {
    run_until(lock, {op});
    host_acquire({op});
    throw_pending_fault();
  }
  return cudaSuccess;
}

cudaError_t copy_1d(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                    const char* api, const void* caller) {
  if (count == 0) return cudaSuccess;
  if (const cudaError_t e = check_copy(dst, src, count, kind); e != cudaSuccess) return set_last_error(e);
  return set_last_error(queue_copy({dst, count, src, count, count, 1, kind, stream, async, api, caller}));
}

cudaError_t copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                    cudaMemcpyKind kind, cudaStream_t stream, bool async, const char* api, const void* caller) {
  if (width > dpitch || width > spitch) return set_last_error(cudaErrorInvalidValue);
  if (height == 0 || width == 0) return cudaSuccess;
  const size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
  if (check_copy(dst, src, 1, kind) != cudaSuccess) return set_last_error(cudaErrorInvalidValue);
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice)
    if (!is_device(dst, dspan)) return set_last_error(cudaErrorInvalidValue);
  if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice)
    if (!is_device(src, sspan)) return set_last_error(cudaErrorInvalidValue);
  if (kind == cudaMemcpyDefault) {
    // A side that starts inside an allocation must lie inside it.
    if (inside_allocation(dst, 1) && !inside_allocation(dst, dspan)) return set_last_error(cudaErrorInvalidValue);
    if (inside_allocation(src, 1) && !inside_allocation(src, sspan)) return set_last_error(cudaErrorInvalidValue);
  }
  return set_last_error(queue_copy({dst, dpitch, src, spitch, width, height, kind, stream, async, api, caller}));
}

cudaError_t memset_2d(void* p, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream, bool async,
                      const char* api, const void* caller) {
  if (width == 0 || height == 0) return cudaSuccess;
  if (width > pitch || !inside_allocation(p, pitch * (height - 1) + width))
    return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  CUstream_st* s = async ? resolve_stream(stream) : resolve_stream(cudaStreamLegacy);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  if (!async)
    if (const cudaError_t e = check_unsafe_call(); e != cudaSuccess) return set_last_error(e);
  OpPtr op = make_memset_op(p, pitch, value, width, height, api, caller);
  if (const cudaError_t e = submit(*s, op); e != cudaSuccess) return set_last_error(e);
  if (!async && !s->capture && space_of(p) == Space::pinned) {
    run_until(lock, {op});
    host_acquire({op});
    throw_pending_fault();
  }
  return cudaSuccess;
}

// cudaFree and cudaFreeHost: wait for all queued work, then free.
cudaError_t free_now(void* p, bool host) {
  if (!p) return cudaSuccess;
  Lock lock = runtime_lock();
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  if (const cudaError_t e = check_unsafe_call(); e != cudaSuccess) return set_last_error(e);
  AllocationInfo info;
  if (!find_allocation(p, &info) || info.begin != reinterpret_cast<uintptr_t>(p) ||
      (info.kind == MemoryKind::pinned_host) != host)
    return set_last_error(cudaErrorInvalidValue);
  const std::vector<OpPtr> ops = pending_ops(-1);
  run_until(lock, ops);
  host_acquire(ops);
  if (!free_memory(p, host ? MemoryKind::pinned_host : MemoryKind::device))
    return set_last_error(cudaErrorInvalidValue);
  forget_allocation(info.begin, info.bytes);
  return cudaSuccess;
}

}  // namespace

}  // namespace seg::sim::detail

using namespace seg::sim::detail;

#define SEG_SIM_CALLER __builtin_return_address(0)

extern "C" {

// ---- allocation -------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t bytes) {
  return allocate(p, bytes, MemoryKind::device, host_thread().device, SEG_SIM_CALLER, false);
}
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream) {
  int device = 0;
  {
    Lock lock = runtime_lock();
    CUstream_st* s = resolve_stream(stream);
    if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
    if (s->capture) {  // graph memory nodes are not simulated
      invalidate(*s->capture, cudaErrorStreamCaptureUnsupported);
      return set_last_error(cudaErrorStreamCaptureUnsupported);
    }
    device = s->device;
  }
  return allocate(p, bytes, MemoryKind::device, device, SEG_SIM_CALLER, true);
}
cudaError_t cudaMallocManaged(void** p, size_t bytes, unsigned int) {
  return allocate(p, bytes, MemoryKind::managed, host_thread().device, SEG_SIM_CALLER, false);
}
// Pinned host memory is reachable from every device; the device recorded is the one current at
// allocation, which is what cudaPointerGetAttributes reports for it.
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  return allocate(p, bytes, MemoryKind::pinned_host, host_thread().device, SEG_SIM_CALLER, false);
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
  return allocate(p, bytes, MemoryKind::pinned_host, host_thread().device, SEG_SIM_CALLER, false);
}
cudaError_t cudaFree(void* p) { return free_now(p, false); }
cudaError_t cudaFreeHost(void* p) { return free_now(p, true); }
cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
  if (!p) return cudaSuccess;
  Lock lock = runtime_lock();
  CUstream_st* s = resolve_stream(stream);
  if (!s) return set_last_error(cudaErrorInvalidResourceHandle);
  if (s->capture) {
    invalidate(*s->capture, cudaErrorStreamCaptureUnsupported);
    return set_last_error(cudaErrorStreamCaptureUnsupported);
  }
  AllocationInfo info;
  if (!find_allocation(p, &info) || info.begin != reinterpret_cast<uintptr_t>(p) ||
      info.kind == MemoryKind::pinned_host)
    return set_last_error(cudaErrorInvalidValue);
  return set_last_error(submit(*s, make_free_op(p, SEG_SIM_CALLER)));
}
cudaError_t cudaHostRegister(void* p, size_t bytes, unsigned int) {
  if (!p || bytes == 0) return set_last_error(cudaErrorInvalidValue);
  {
    Lock lock = runtime_lock();
    if (const cudaError_t e = check_unsafe_call(); e != cudaSuccess) return set_last_error(e);
  }
  if (space_of(p) != Space::pageable) return set_last_error(cudaErrorHostMemoryAlreadyRegistered);
  register_host_range(p, bytes);
  return cudaSuccess;
}
cudaError_t cudaHostUnregister(void* p) {
  return unregister_host_range(p) ? cudaSuccess : set_last_error(cudaErrorHostMemoryNotRegistered);
}
// Unified addressing: a pinned host buffer has the same address on every device.
cudaError_t cudaHostGetDevicePointer(void** device_pointer, void* host_pointer, unsigned int flags) {
  if (!device_pointer || flags != 0 || space_of(host_pointer) != Space::pinned)
    return set_last_error(cudaErrorInvalidValue);
  *device_pointer = host_pointer;
  return cudaSuccess;
}

// ---- copies -----------------------------------------------------------------------------------------
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return copy_1d(dst, src, count, kind, nullptr, false, "cudaMemcpy", SEG_SIM_CALLER);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return copy_1d(dst, src, count, kind, stream, true, "cudaMemcpyAsync", SEG_SIM_CALLER);
}
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, nullptr, false, "cudaMemcpy2D", SEG_SIM_CALLER);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, "cudaMemcpy2DAsync", SEG_SIM_CALLER);
}

namespace {
// A peer copy names both devices: each pointer must be memory of the device it is said to be on.
bool on_device(const void* p, size_t count, int device) {
  AllocationInfo info;
  return valid_device(device) && find_allocation(p, &info) && info.kind != MemoryKind::pinned_host &&
         info.device == device && reinterpret_cast<uintptr_t>(p) + count <= info.begin + info.bytes;
}
}  // namespace

cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t count) {
  if (!valid_device(dst_device) || !valid_device(src_device)) return set_last_error(cudaErrorInvalidDevice);
  if (count == 0) return cudaSuccess;
  if (!on_device(dst, count, dst_device) || !on_device(src, count, src_device))
    return set_last_error(cudaErrorInvalidValue);
  return set_last_error(queue_copy(
      {dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, nullptr, false, "cudaMemcpyPeer", SEG_SIM_CALLER}));
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t count,
                                cudaStream_t stream) {
  if (!valid_device(dst_device) || !valid_device(src_device)) return set_last_error(cudaErrorInvalidDevice);
  if (count == 0) return cudaSuccess;
  if (!on_device(dst, count, dst_device) || !on_device(src, count, src_device))
    return set_last_error(cudaErrorInvalidValue);
  return set_last_error(queue_copy({dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, stream, true,
                                    "cudaMemcpyPeerAsync", SEG_SIM_CALLER}));
}

// A __device__ variable is an ordinary global in the simulator: its address is the device address.
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind kind) {
  if (!symbol || (!src && count)) return set_last_error(cudaErrorInvalidValue);
  if (count == 0) return cudaSuccess;
  CopyRequest r{static_cast<char*>(const_cast<void*>(symbol)) + offset,
                count,
                src,
                count,
                count,
                1,
                kind,
                nullptr,
                false,
                "cudaMemcpyToSymbol",
                SEG_SIM_CALLER};
  r.to_symbol = true;
  return set_last_error(queue_copy(r));
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind) {
  if (!symbol || (!dst && count)) return set_last_error(cudaErrorInvalidValue);
  if (count == 0) return cudaSuccess;
  CopyRequest r{dst,
                count,
                static_cast<const char*>(symbol) + offset,
                count,
                count,
                1,
                kind,
                nullptr,
                false,
                "cudaMemcpyFromSymbol",
                SEG_SIM_CALLER};
  r.from_symbol = true;
  return set_last_error(queue_copy(r));
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream) {
  if (!symbol || (!src && count)) return set_last_error(cudaErrorInvalidValue);
  if (count == 0) return cudaSuccess;
  CopyRequest r{static_cast<char*>(const_cast<void*>(symbol)) + offset,
                count,
                src,
                count,
                count,
                1,
                kind,
                stream,
                true,
                "cudaMemcpyToSymbolAsync",
                SEG_SIM_CALLER};
  r.to_symbol = true;
  return set_last_error(queue_copy(r));
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  if (!symbol || (!dst && count)) return set_last_error(cudaErrorInvalidValue);
  if (count == 0) return cudaSuccess;
  CopyRequest r{dst,
                count,
                static_cast<const char*>(symbol) + offset,
                count,
                count,
                1,
                kind,
                stream,
                true,
                "cudaMemcpyFromSymbolAsync",
                SEG_SIM_CALLER};
  r.from_symbol = true;
  return set_last_error(queue_copy(r));
}
cudaError_t cudaGetSymbolAddress(void** dev_ptr, const void* symbol) {
  if (!dev_ptr || !symbol) return set_last_error(cudaErrorInvalidValue);
  *dev_ptr = const_cast<void*>(symbol);
  return cudaSuccess;
}

// ---- memsets ----------------------------------------------------------------------------------------
cudaError_t cudaMemset(void* p, int value, size_t count) {
  return memset_2d(p, count, value, count, 1, nullptr, false, "cudaMemset", SEG_SIM_CALLER);
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t count, cudaStream_t stream) {
  return memset_2d(p, count, value, count, 1, stream, true, "cudaMemsetAsync", SEG_SIM_CALLER);
}
cudaError_t cudaMemset2D(void* p, size_t pitch, int value, size_t width, size_t height) {
  return memset_2d(p, pitch, value, width, height, nullptr, false, "cudaMemset2D", SEG_SIM_CALLER);
}
cudaError_t cudaMemset2DAsync(void* p, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream) {
  return memset_2d(p, pitch, value, width, height, stream, true, "cudaMemset2DAsync", SEG_SIM_CALLER);
}

}  // extern "C"
