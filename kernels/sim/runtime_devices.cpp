// Devices of the simulator: cudaGetDeviceCount (seg::sim::device_count(), SEG_SIM_DEVICES),
// cudaSetDevice/cudaGetDevice per host thread, properties of each (the same simulated sm_90 GPU
// with H100-like limits, distinct PCI bus ids), cudaMemGetInfo per device (80 GiB each),
// cudaDeviceSynchronize and cudaDeviceReset, and peer access: cudaDeviceCanAccessPeer (every pair
// of distinct devices can), cudaDeviceEnablePeerAccess / cudaDeviceDisablePeerAccess for the
// current device. A kernel on device d given a pointer into device e's memory faults
// (FaultKind::peer_access) unless d enabled access to e; copies between devices
// (cudaMemcpyPeer[Async], cudaMemcpy with cudaMemcpyDefault) need no peer access.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/stream_executor.h"

namespace seg::sim::detail {

cudaError_t set_last_error(cudaError_t e);    // runtime_api.cpp
constexpr size_t kTotalMemory = 80ull << 30;  // what each simulated device reports (80 GiB)

namespace {

constexpr int kMaxDynamicSmem = 232448;  // 227 KiB

void fill_properties(cudaDeviceProp& p, int device) {
  std::memset(&p, 0, sizeof p);
  std::snprintf(p.name, sizeof p.name, "seg::sim simulated sm_90 GPU (H100-like) #%d", device);
  p.totalGlobalMem = kTotalMemory;
  p.sharedMemPerBlock = 48 * 1024;
  p.sharedMemPerBlockOptin = kMaxDynamicSmem;
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
  p.pciBusID = 0x18 + device;  // distinct per device, as real GPUs are
  p.pciDeviceID = 0;
  p.pciDomainID = 0;
}

}  // namespace

size_t device_memory_capacity() { return kTotalMemory; }

}  // namespace seg::sim::detail

using namespace seg::sim::detail;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return set_last_error(cudaErrorInvalidValue);
  *count = current_device_count();
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return set_last_error(cudaErrorInvalidValue);
  *device = host_thread().device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (!valid_device(device)) return set_last_error(cudaErrorInvalidDevice);
  Lock lock = runtime_lock();
  host_thread().device = device;
  return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) {
  return valid_device(device) ? cudaSuccess : set_last_error(cudaErrorInvalidDevice);
}

cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  Lock lock = runtime_lock();
  device_state(host_thread().device).flags = flags;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  if (!flags) return set_last_error(cudaErrorInvalidValue);
  Lock lock = runtime_lock();
  *flags = device_state(host_thread().device).flags;
  return cudaSuccess;
}

// Waits for every queued operation of the current device; throws the KernelFault of any that
// faulted.
cudaError_t cudaDeviceSynchronize(void) {
  Lock lock = runtime_lock();
  if (host_thread().in_host_function) return set_last_error(cudaErrorNotPermitted);
  const int device = host_thread().device;
  if (const cudaError_t e = check_sync_during_capture(nullptr, device); e != cudaSuccess) return set_last_error(e);
  const std::vector<OpPtr> ops = pending_ops(device);
  run_until(lock, ops);
  host_acquire(ops);
  throw_pending_fault();
  return cudaSuccess;
}

// Waits for the device's work and disables its peer access. Unlike the real call it keeps the
// device's allocations and streams (tests go on using them).
cudaError_t cudaDeviceReset(void) {
  Lock lock = runtime_lock();
  const int device = host_thread().device;
  const std::vector<OpPtr> ops = pending_ops(device);
  run_until(lock, ops);
  host_acquire(ops);
  for (int p = 0; p < kMaxDevices; ++p) set_peer_access(device, p, false);
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return set_last_error(cudaErrorInvalidValue);
  if (!valid_device(device)) return set_last_error(cudaErrorInvalidDevice);
  fill_properties(*prop, device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return set_last_error(cudaErrorInvalidValue);
  if (!valid_device(device)) return set_last_error(cudaErrorInvalidDevice);
  cudaDeviceProp p;
  fill_properties(p, device);
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
    case cudaDevAttrPciBusId:
      *value = p.pciBusID;
      break;
    case cudaDevAttrConcurrentManagedAccess:
    case cudaDevAttrManagedMemory:
    case cudaDevAttrConcurrentKernels:
      *value = 1;
      break;
    case cudaDevAttrAsyncEngineCount:
      *value = p.asyncEngineCount;
      break;
    default:
      return set_last_error(cudaErrorNotSupported);
  }
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return set_last_error(cudaErrorInvalidValue);
  *total_bytes = kTotalMemory;
  *free_bytes = *total_bytes - std::min(*total_bytes, allocated_device_bytes(host_thread().device));
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can_access, int device, int peer) {
  if (!can_access) return set_last_error(cudaErrorInvalidValue);
  if (!valid_device(device) || !valid_device(peer)) return set_last_error(cudaErrorInvalidDevice);
  *can_access = device != peer;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  if (flags != 0) return set_last_error(cudaErrorInvalidValue);
  if (!valid_device(peer)) return set_last_error(cudaErrorInvalidDevice);
  Lock lock = runtime_lock();
  const int device = host_thread().device;
  if (peer == device) return set_last_error(cudaErrorInvalidDevice);
  if (peer_mask(device) >> peer & 1u) return set_last_error(cudaErrorPeerAccessAlreadyEnabled);
  set_peer_access(device, peer, true);
  return cudaSuccess;
}

cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  if (!valid_device(peer)) return set_last_error(cudaErrorInvalidDevice);
  Lock lock = runtime_lock();
  const int device = host_thread().device;
  if (peer == device || !(peer_mask(device) >> peer & 1u)) return set_last_error(cudaErrorPeerAccessNotEnabled);
  set_peer_access(device, peer, false);
  return cudaSuccess;
}

}  // extern "C"
