// The CUDA runtime API of the simulator build: errors, function attributes, occupancy, and
// the launch entry point. The declarations are CUDA's own (cuda_runtime_api.h); the runtime_*.cpp
// files define the functions, so code built against the simulator links without libcudart:
//   runtime_devices.cpp  device count, current device, properties, peer access, memory info
//   runtime_memory.cpp   allocation, copies and memsets (synchronous and asynchronous)
//   runtime_streams.cpp  streams, events, host functions, synchronisation
//   runtime_graphs.cpp   stream capture and graphs
// Work is queued on streams and run by the stream executor (stream_executor.h) at synchronisation
// points, as a GPU runs it asynchronously to the host.
//
// Checks the real runtime also makes return its error codes and set the "last error" that
// cudaGetLastError() returns and clears. A fault found while running queued work is thrown as
// seg::sim::KernelFault by the next synchronising call (sim.h); until then cudaGetLastError and
// cudaPeekAtLastError return its error code, as a GPU's sticky error.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "kernels/sim/counters.h"
#include "kernels/sim/stream_executor.h"
#include "kernels/sim/stream_ops.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

namespace {

thread_local cudaError_t tls_last_error = cudaSuccess;
std::mutex g_attr_mutex;                 // function attributes
constexpr int kMaxDynamicSmem = 232448;  // 227 KiB

std::map<const void*, int>& function_smem_limits() {
  static std::map<const void*, int> m;
  return m;
}

}  // namespace

cudaError_t set_last_error(cudaError_t e) {
  if (e != cudaSuccess) tls_last_error = e;
  return e;
}

int max_dynamic_smem_attribute(const void* kernel) {
  std::lock_guard<std::mutex> lock(g_attr_mutex);
  auto it = function_smem_limits().find(kernel);
  return it == function_smem_limits().end() ? 0 : it->second;
}

namespace {

[[noreturn]] void launch_error(const LaunchRequest& r, FaultKind kind, cudaError_t e, const std::string& what) {
  throw KernelFault(kind, std::string("seg::sim: ") + cudaGetErrorName(e) + ": kernel " + r.kernel_name +
                              " launched at " + relative_path(r.file) + ":" + std::to_string(r.line) + ": " + what);
}

}  // namespace

void enqueue_launch(std::shared_ptr<const LaunchRequest> request) {
  const LaunchRequest& r = *request;
  if (Worker* w = current_worker(); w && w->current)
    throw KernelFault(FaultKind::launch_config, std::string("seg::sim: kernel ") + r.kernel_name +
                                                    " launched from inside a kernel: dynamic parallelism is not "
                                                    "simulated");
  Lock lock = runtime_lock();
  throw_pending_fault();  // a fault of earlier work comes out of the next launch
  validate_launch(r);
  HostThread& h = host_thread();
  if (h.in_host_function)
    launch_error(r, FaultKind::invalid_stream, cudaErrorNotPermitted,
                 "launched from a host function (cudaLaunchHostFunc), which may not call the CUDA runtime");
  CUstream_st* s = resolve_stream(r.stream);
  if (!s) launch_error(r, FaultKind::invalid_stream, cudaErrorInvalidResourceHandle, "the stream is not a live stream");
  if (s->device != h.device)
    launch_error(r, FaultKind::invalid_stream, cudaErrorInvalidResourceHandle,
                 "the stream belongs to device " + std::to_string(s->device) + " but device " +
                     std::to_string(h.device) + " is current (cudaSetDevice)");
  const bool capturing = s->capture != nullptr;  // then the op becomes a graph node, never run itself
  if (!h.last_counted) h.last_counted = std::make_shared<LastCounted>();
  OpPtr op = make_kernel_op(std::move(request), h.last_counted);
  if (const cudaError_t e = submit(*s, op); e != cudaSuccess)
    launch_error(r, FaultKind::stream_capture, e,
                 std::string(cudaGetErrorString(e)) + " (a stream capture is in progress)");
  if (capturing) return;
  h.last_launch = op;
  if (options().sync_launch) {
    // Not a synchronisation of the program: the host's clock does not advance, so the race
    // detector reports the same races as without it.
    run_until(lock, {op});
    throw_pending_fault();
  }
}

}  // namespace seg::sim::detail

namespace seg::sim {

LaunchStats last_launch_stats() {
  using namespace detail;
  Lock lock = runtime_lock();
  const OpPtr op = host_thread().last_launch;
  if (!op) return {};
  run_until(lock, {op});
  host_acquire({op});
  throw_pending_fault();
  const LaunchStats* stats = kernel_op_stats(*op);
  return stats ? *stats : LaunchStats{};
}

KernelCounters last_launch_counters() {
  using namespace detail;
  Lock lock = runtime_lock();
  HostThread& h = host_thread();
  const OpPtr op = h.last_launch;
  if (!op) return {};
  run_until(lock, {op});
  host_acquire({op});
  throw_pending_fault();
  // The latest launch that ran without a fault: a launch that faulted records nothing.
  std::lock_guard<std::mutex> counted_lock(h.last_counted->mutex);
  return h.last_counted->counters ? *h.last_counted->counters : KernelCounters{};
}

}  // namespace seg::sim

using seg::sim::detail::set_last_error;

extern "C" {

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = seg::sim::detail::tls_last_error;
  seg::sim::detail::tls_last_error = cudaSuccess;
  if (e != cudaSuccess) return e;
  auto lock = seg::sim::detail::runtime_lock();
  return seg::sim::detail::pending_fault_error();
}
cudaError_t cudaPeekAtLastError(void) {
  if (seg::sim::detail::tls_last_error != cudaSuccess) return seg::sim::detail::tls_last_error;
  auto lock = seg::sim::detail::runtime_lock();
  return seg::sim::detail::pending_fault_error();
}

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidMemcpyDirection:
      return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorInvalidDeviceFunction:
      return "cudaErrorInvalidDeviceFunction";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorNotSupported:
      return "cudaErrorNotSupported";
    case cudaErrorIllegalState:
      return "cudaErrorIllegalState";
    case cudaErrorMisalignedAddress:
      return "cudaErrorMisalignedAddress";
    case cudaErrorLaunchTimeout:
      return "cudaErrorLaunchTimeout";
    case cudaErrorPeerAccessAlreadyEnabled:
      return "cudaErrorPeerAccessAlreadyEnabled";
    case cudaErrorPeerAccessNotEnabled:
      return "cudaErrorPeerAccessNotEnabled";
    case cudaErrorNotPermitted:
      return "cudaErrorNotPermitted";
    case cudaErrorStreamCaptureUnsupported:
      return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated:
      return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched:
      return "cudaErrorStreamCaptureUnmatched";
    case cudaErrorStreamCaptureUnjoined:
      return "cudaErrorStreamCaptureUnjoined";
    case cudaErrorStreamCaptureIsolation:
      return "cudaErrorStreamCaptureIsolation";
    case cudaErrorStreamCaptureImplicit:
      return "cudaErrorStreamCaptureImplicit";
    case cudaErrorCapturedEvent:
      return "cudaErrorCapturedEvent";
    case cudaErrorStreamCaptureWrongThread:
      return "cudaErrorStreamCaptureWrongThread";
    default:
      return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorInvalidDeviceFunction:
      return "invalid device function";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorNotSupported:
      return "operation not supported";
    case cudaErrorIllegalState:
      return "the operation cannot be performed in the present state";
    case cudaErrorMisalignedAddress:
      return "misaligned address";
    case cudaErrorLaunchTimeout:
      return "the launch timed out and was terminated";
    case cudaErrorPeerAccessAlreadyEnabled:
      return "peer access is already enabled";
    case cudaErrorPeerAccessNotEnabled:
      return "peer access has not been enabled";
    case cudaErrorNotPermitted:
      return "operation not permitted";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched:
      return "the capture was not initiated in this stream";
    case cudaErrorStreamCaptureUnjoined:
      return "capture sequence contains a fork that was not joined to the primary stream";
    case cudaErrorStreamCaptureIsolation:
      return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureImplicit:
      return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorCapturedEvent:
      return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorStreamCaptureWrongThread:
      return "attempt to terminate a thread-local capture sequence from another thread";
    default:
      return "unknown error";
  }
}

// ---- kernels --------------------------------------------------------------------------------------
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (!func) return set_last_error(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > seg::sim::detail::kMaxDynamicSmem) return set_last_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(seg::sim::detail::g_attr_mutex);
    seg::sim::detail::function_smem_limits()[func] = value;
  }
  return cudaSuccess;
}
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (!attr || !func) return set_last_error(cudaErrorInvalidValue);
  std::memset(attr, 0, sizeof *attr);
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  const int limit = seg::sim::detail::max_dynamic_smem_attribute(func);
  attr->maxDynamicSharedSizeBytes = limit > 0 ? limit : 48 * 1024;
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func, int block_size,
                                                          size_t dynamic_smem) {
  if (!blocks || !func || block_size <= 0) return set_last_error(cudaErrorInvalidValue);
  // Threads and shared memory only (registers are not simulated).
  int by_threads = 2048 / block_size;
  int by_smem = dynamic_smem ? static_cast<int>(233472 / (dynamic_smem + 1024)) : 32;
  *blocks = std::max(0, std::min({by_threads, by_smem, 32}));
  return cudaSuccess;
}

}  // extern "C"
