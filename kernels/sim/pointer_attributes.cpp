// cudaPointerGetAttributes for the simulator build, answered from the allocation registry
// (device_memory.h) the way the CUDA runtime answers it on a system with unified addressing:
//   device memory (cudaMalloc)                     cudaMemoryTypeDevice, the device, devicePointer = ptr
//   managed memory (cudaMallocManaged)             cudaMemoryTypeManaged, devicePointer = hostPointer = ptr
//   pinned host memory (cudaHostAlloc/MallocHost)  cudaMemoryTypeHost, the device current at allocation,
//                                                  devicePointer = hostPointer = ptr (mapped)
//   anything else (plain host memory, freed memory) cudaMemoryTypeUnregistered, device -2
//                                                  (cudaInvalidDeviceId), hostPointer = ptr
// A pointer into the middle of an allocation gets that allocation's attributes, with its own
// address as the pointers. Not covered: memory registered with cudaHostRegister (the simulator's
// cudaHostRegister does not record it, so it reads as unregistered).
#include <cuda_runtime.h>

#include <cstring>

#include "kernels/sim/device_memory.h"

namespace seg::sim::detail {
cudaError_t set_last_error(cudaError_t e);  // runtime_api.cpp
}  // namespace seg::sim::detail

extern "C" cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  using seg::sim::detail::MemoryKind;
  if (!attributes) return seg::sim::detail::set_last_error(cudaErrorInvalidValue);
  std::memset(attributes, 0, sizeof *attributes);
  void* p = const_cast<void*>(ptr);
  seg::sim::detail::AllocationRecord r;
  if (!ptr || !seg::sim::detail::live_allocation_containing(reinterpret_cast<uintptr_t>(ptr), &r)) {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = cudaInvalidDeviceId;
    attributes->hostPointer = p;
    return cudaSuccess;
  }
  attributes->device = r.device;
  switch (r.kind) {
    case MemoryKind::device:
      attributes->type = cudaMemoryTypeDevice;
      attributes->devicePointer = p;
      break;
    case MemoryKind::managed:
      attributes->type = cudaMemoryTypeManaged;
      attributes->devicePointer = p;
      attributes->hostPointer = p;
      break;
    case MemoryKind::pinned_host:
      attributes->type = cudaMemoryTypeHost;
      attributes->devicePointer = p;
      attributes->hostPointer = p;
      break;
  }
  return cudaSuccess;
}
