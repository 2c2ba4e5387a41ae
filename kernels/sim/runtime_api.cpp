// Synchronous shims of the CUDA runtime API calls the backend uses, for the simulator build.
//
// The declarations are CUDA's own (cuda_runtime_api.h); this file defines the functions, so code
// built against the simulator links without libcudart. There is one simulated device, index 0, an
// sm_90 GPU with H100-like properties. Everything is synchronous: a kernel launch returns when it
// has run, copies happen at once, streams only exist to be passed around, and events record the
// host time (so cudaEventElapsedTime measures the simulation, not a GPU).
//
// Checks the real runtime also makes: cudaFree of a pointer cudaMalloc did not return, copies and
// memsets whose device range is not inside one allocation, unknown streams and events, device
// indices other than 0. They return the runtime's error codes and set the sticky "last error" that
// cudaGetLastError() returns and clears.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "kernels/sim/device_memory.h"

namespace seg::sim::detail {

namespace {

thread_local cudaError_t tls_last_error = cudaSuccess;
std::mutex g_mutex;                           // streams, events, function attributes (host-side calls only)
constexpr size_t kTotalMemory = 80ull << 30;  // what the simulated device reports (80 GiB)
constexpr int kMaxDynamicSmem = 232448;       // 227 KiB

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
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = function_smem_limits().find(kernel);
  return it == function_smem_limits().end() ? 0 : it->second;
}

}  // namespace seg::sim::detail

// The opaque handle types of the runtime API; complete only here.
struct CUstream_st {
  unsigned flags = 0;
};
struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point time;
};

namespace {

using seg::sim::detail::g_mutex;
using seg::sim::detail::MemoryKind;
using seg::sim::detail::set_last_error;

std::set<cudaStream_t>& streams() {
  static std::set<cudaStream_t> s;
  return s;
}
std::set<cudaEvent_t>& events() {
  static std::set<cudaEvent_t> s;
  return s;
}

bool valid_stream(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return true;
  std::lock_guard<std::mutex> lock(g_mutex);
  return streams().count(s) != 0;
}

bool valid_event(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return e && events().count(e) != 0;
}

bool is_device(const void* p, size_t n) {
  MemoryKind kind;
  return seg::sim::detail::inside_allocation(p, n, &kind) && kind != MemoryKind::pinned_host;
}

cudaError_t allocate(void** p, size_t bytes, MemoryKind kind) {
  if (!p) return set_last_error(cudaErrorInvalidValue);
  *p = nullptr;
  if (kind != MemoryKind::pinned_host &&
      seg::sim::detail::allocated_device_bytes() + bytes > seg::sim::detail::kTotalMemory)
    return set_last_error(cudaErrorMemoryAllocation);
  *p = seg::sim::detail::allocate_memory(bytes, kind);
  return *p ? cudaSuccess : set_last_error(cudaErrorMemoryAllocation);
}

// Checks the device side(s) of a copy against the allocations. cudaMemcpyDefault infers the
// direction from the pointers (unified addressing), as the runtime does.
cudaError_t check_copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (count == 0) return cudaSuccess;
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
      const bool dst_dev = seg::sim::detail::inside_allocation(dst, 1),
                 src_dev = seg::sim::detail::inside_allocation(src, 1);
      if (dst_dev && !seg::sim::detail::inside_allocation(dst, count)) return cudaErrorInvalidValue;
      if (src_dev && !seg::sim::detail::inside_allocation(src, count)) return cudaErrorInvalidValue;
      return cudaSuccess;
    }
  }
  return cudaErrorInvalidMemcpyDirection;
}

void fill_properties(cudaDeviceProp& p) {
  std::memset(&p, 0, sizeof p);
  std::snprintf(p.name, sizeof p.name, "seg::sim simulated sm_90 GPU (H100-like)");
  p.totalGlobalMem = seg::sim::detail::kTotalMemory;
  p.sharedMemPerBlock = 48 * 1024;
  p.sharedMemPerBlockOptin = seg::sim::detail::kMaxDynamicSmem;
  p.sharedMemPerMultiprocessor = 233472;
  p.reservedSharedMemPerBlock = 1024;
  p.regsPerBlock = 65536;
  p.regsPerMultiprocessor = 65536;
  p.warpSize = 32;
  p.memPitch = 2147483647;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = 1024;
  p.maxThreadsDim[1] = 1024;
  p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647;
  p.maxGridSize[1] = 65535;
  p.maxGridSize[2] = 65535;
  p.totalConstMem = 65536;
  p.major = 9;
  p.minor = 0;
  p.textureAlignment = 512;
  p.texturePitchAlignment = 32;
  p.multiProcessorCount = 132;
  p.concurrentKernels = 1;
  p.asyncEngineCount = 2;
  p.unifiedAddressing = 1;
  p.memoryBusWidth = 5120;
  p.l2CacheSize = 50 * 1024 * 1024;
  p.persistingL2CacheMaxSize = 30 * 1024 * 1024;
  p.maxThreadsPerMultiProcessor = 2048;
  p.maxBlocksPerMultiProcessor = 32;
  p.streamPrioritiesSupported = 1;
  p.globalL1CacheSupported = 1;
  p.localL1CacheSupported = 1;
  p.managedMemory = 1;
  p.concurrentManagedAccess = 1;
  p.computePreemptionSupported = 1;
  p.cooperativeLaunch = 1;
  p.memoryPoolsSupported = 1;
  p.clusterLaunch = 1;
  p.hostNumaId = -1;
}

}  // namespace

extern "C" {

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = seg::sim::detail::tls_last_error;
  seg::sim::detail::tls_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return seg::sim::detail::tls_last_error; }

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
    default:
      return "unknown error";
  }
}

// ---- devices ------------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return set_last_error(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (!device) return set_last_error(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : set_last_error(cudaErrorInvalidDevice); }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaDeviceReset(void) { return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return set_last_error(cudaErrorInvalidValue);
  if (device != 0) return set_last_error(cudaErrorInvalidDevice);
  fill_properties(*prop);
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return set_last_error(cudaErrorInvalidValue);
  if (device != 0) return set_last_error(cudaErrorInvalidDevice);
  cudaDeviceProp p;
  fill_properties(p);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      *value = p.maxThreadsPerBlock;
      break;
    case cudaDevAttrMaxBlockDimX:
      *value = p.maxThreadsDim[0];
      break;
    case cudaDevAttrMaxBlockDimY:
      *value = p.maxThreadsDim[1];
      break;
    case cudaDevAttrMaxBlockDimZ:
      *value = p.maxThreadsDim[2];
      break;
    case cudaDevAttrMaxGridDimX:
      *value = p.maxGridSize[0];
      break;
    case cudaDevAttrMaxGridDimY:
      *value = p.maxGridSize[1];
      break;
    case cudaDevAttrMaxGridDimZ:
      *value = p.maxGridSize[2];
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(p.sharedMemPerBlock);
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(p.sharedMemPerBlockOptin);
      break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *value = static_cast<int>(p.sharedMemPerMultiprocessor);
      break;
    case cudaDevAttrWarpSize:
      *value = p.warpSize;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = p.multiProcessorCount;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = p.major;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = p.minor;
      break;
    case cudaDevAttrL2CacheSize:
      *value = p.l2CacheSize;
      break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *value = p.maxThreadsPerMultiProcessor;
      break;
    case cudaDevAttrMaxRegistersPerBlock:
      *value = p.regsPerBlock;
      break;
    case cudaDevAttrUnifiedAddressing:
      *value = 1;
      break;
    default:
      return set_last_error(cudaErrorNotSupported);
  }
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return set_last_error(cudaErrorInvalidValue);
  *total_bytes = seg::sim::detail::kTotalMemory;
  *free_bytes = *total_bytes - std::min(*total_bytes, seg::sim::detail::allocated_device_bytes());
  return cudaSuccess;
}

// ---- memory -------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t bytes) { return allocate(p, bytes, MemoryKind::device); }
cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t) { return allocate(p, bytes, MemoryKind::device); }
cudaError_t cudaMallocManaged(void** p, size_t bytes, unsigned int) { return allocate(p, bytes, MemoryKind::managed); }
cudaError_t cudaMallocHost(void** p, size_t bytes) { return allocate(p, bytes, MemoryKind::pinned_host); }
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) { return allocate(p, bytes, MemoryKind::pinned_host); }
cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  return seg::sim::detail::free_memory(p, MemoryKind::device) ? cudaSuccess : set_last_error(cudaErrorInvalidValue);
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return cudaFree(p); }
cudaError_t cudaFreeHost(void* p) {
  if (!p) return cudaSuccess;
  return seg::sim::detail::free_memory(p, MemoryKind::pinned_host) ? cudaSuccess
                                                                   : set_last_error(cudaErrorInvalidValue);
}
cudaError_t cudaHostRegister(void*, size_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaHostUnregister(void*) { return cudaSuccess; }

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (const cudaError_t e = check_copy(dst, src, count, kind); e != cudaSuccess) return set_last_error(e);
  if (count) std::memmove(dst, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (!valid_stream(stream)) return set_last_error(cudaErrorInvalidResourceHandle);
  return cudaMemcpy(dst, src, count, kind);
}
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {
  if (width > dpitch || width > spitch) return set_last_error(cudaErrorInvalidValue);
  if (height == 0 || width == 0) return cudaSuccess;
  const size_t dspan = dpitch * (height - 1) + width, sspan = spitch * (height - 1) + width;
  if (check_copy(dst, src, 1, kind) != cudaSuccess) return set_last_error(cudaErrorInvalidValue);
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice)
    if (!is_device(dst, dspan)) return set_last_error(cudaErrorInvalidValue);
  if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice)
    if (!is_device(src, sspan)) return set_last_error(cudaErrorInvalidValue);
  for (size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
  return cudaSuccess;
}
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind) {
  if (!symbol || (!src && count)) return set_last_error(cudaErrorInvalidValue);
  std::memcpy(static_cast<char*>(const_cast<void*>(symbol)) + offset, src, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind) {
  if (!symbol || (!dst && count)) return set_last_error(cudaErrorInvalidValue);
  std::memcpy(dst, static_cast<const char*>(symbol) + offset, count);
  return cudaSuccess;
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream) {
  if (!valid_stream(stream)) return set_last_error(cudaErrorInvalidResourceHandle);
  return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  if (!valid_stream(stream)) return set_last_error(cudaErrorInvalidResourceHandle);
  return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}
// A __device__ variable is an ordinary global in the simulator: its address is the device address.
cudaError_t cudaGetSymbolAddress(void** dev_ptr, const void* symbol) {
  if (!dev_ptr || !symbol) return set_last_error(cudaErrorInvalidValue);
  *dev_ptr = const_cast<void*>(symbol);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t count) {
  if (count == 0) return cudaSuccess;
  if (!is_device(p, count)) return set_last_error(cudaErrorInvalidValue);
  std::memset(p, value, count);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t count, cudaStream_t stream) {
  if (!valid_stream(stream)) return set_last_error(cudaErrorInvalidResourceHandle);
  return cudaMemset(p, value, count);
}

// ---- streams and events -------------------------------------------------------------------------
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  if (!s) return set_last_error(cudaErrorInvalidValue);
  *s = new CUstream_st{flags};
  std::lock_guard<std::mutex> lock(g_mutex);
  streams().insert(*s);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int) {
  return cudaStreamCreateWithFlags(s, flags);
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!streams().erase(s)) return set_last_error(cudaErrorInvalidResourceHandle);
  delete s;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  return valid_stream(s) ? cudaSuccess : set_last_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  return valid_stream(s) ? cudaSuccess : set_last_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
  return valid_stream(s) && valid_event(e) ? cudaSuccess : set_last_error(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  if (!e) return set_last_error(cudaErrorInvalidValue);
  *e = new CUevent_st{flags, false, {}};
  std::lock_guard<std::mutex> lock(g_mutex);
  events().insert(*e);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!events().erase(e)) return set_last_error(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (!valid_event(e) || !valid_stream(s)) return set_last_error(cudaErrorInvalidResourceHandle);
  e->recorded = true;
  e->time = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  return valid_event(e) ? cudaSuccess : set_last_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return valid_event(e) ? cudaSuccess : set_last_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return set_last_error(cudaErrorInvalidValue);
  if (!valid_event(start) || !valid_event(end)) return set_last_error(cudaErrorInvalidResourceHandle);
  if ((start->flags | end->flags) & cudaEventDisableTiming) return set_last_error(cudaErrorInvalidResourceHandle);
  if (!start->recorded || !end->recorded) return set_last_error(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return cudaSuccess;
}

// ---- kernels --------------------------------------------------------------------------------------
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (!func) return set_last_error(cudaErrorInvalidDeviceFunction);
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || value > seg::sim::detail::kMaxDynamicSmem) return set_last_error(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> lock(g_mutex);
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
