// Caching allocators (DESIGN decision 6).
//
// Upstream batches change shape every step, so a fixed memory plan does not fit. Instead every
// device has a caching allocator: a freed block goes to a free list keyed by its size class and is
// handed out again for the next request of that class. After the first few steps every size class
// has been seen and a training step makes no new system allocations; stats().system_allocs proves it.
//
// Size classes: requests are rounded up to a multiple of 64 bytes below 4 KiB, and above that to
// four classes per power of two (at most 25% waste). Blocks are 64-byte aligned on the CPU (a cache
// line, and enough for AVX-512 loads) and 256-byte aligned on CUDA (cudaMalloc's guarantee).
//
// Streams (CUDA, DESIGN decision 13). A device block belongs to the stream that was current when it
// was allocated (its home stream). Freed, it goes back to the free list of that stream: any later
// work of that stream is queued behind the kernels that used it, so reuse by the same stream is safe
// without waiting. A block that other streams used as well (Storage::record_stream, e.g. the copy
// stream wrote a batch the compute stream reads) is reused only after an event recorded on each of
// those streams at the free has completed. Pinned host blocks have no home stream (the host itself
// writes them): every stream that copied from them must be done first.
//
// Poison (SEG_CUDA_POISON_FREED=1, on in the simulator tests): freed device blocks are filled with
// 0xFF bytes on their home stream (NaN in f32/f16/bf16, -1 in integers), so a use after free or a
// read of memory nobody wrote shows up as NaN in the results instead of stale plausible values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/device.h"
#include "kernels/cuda/stream.h"

namespace seg {

struct AllocatorStats {
  size_t in_use_bytes = 0;   // bytes held by live tensors (rounded to the size class)
  size_t peak_bytes = 0;     // maximum of in_use_bytes since the last reset_peak()
  size_t cached_bytes = 0;   // bytes sitting in free lists
  uint64_t requests = 0;     // allocate() calls
  uint64_t cache_hits = 0;   // requests served from a free list
  uint64_t system_allocs = 0;  // requests that went to the system (malloc / cudaMalloc)
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory for `bytes` bytes (never null); throws Error(device) when out of memory.
  virtual void* allocate(size_t bytes) = 0;
  // Returns a block obtained from allocate() with the same byte count.
  virtual void deallocate(void* ptr, size_t bytes) = 0;
  // The same for a block that work queued on `streams` may still use (CUDA allocators: reused only
  // after events recorded on them now have completed; others: deallocate).
  virtual void deallocate_after(void* ptr, size_t bytes, const std::vector<cuda::Stream>& streams) {
    (void)streams;
    deallocate(ptr, bytes);
  }
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() = 0;
  // Frees every cached block back to the system.
  virtual void release_cached() = 0;
};

// The size class a request of `bytes` is rounded to.
size_t allocator_size_class(size_t bytes);

// The allocator of a device (created on first use, lives for the whole process).
Allocator& allocator_for(Device device);

// Page-locked ("pinned") host memory, cached like the others: CPU memory that a GPU can copy from
// asynchronously with DMA at full PCIe/NVLink speed, where pageable memory is first staged through
// a driver buffer. Exists in CUDA builds with a device present; elsewhere asking for it is
// Error(device), so callers test pinned_host_memory_available() first.
bool pinned_host_memory_available();
Allocator& pinned_host_allocator();
// Whether ptr points into pinned host memory (false in builds without CUDA): for tests.
bool is_pinned_host_pointer(const void* ptr);

// Poisoning of freed CUDA blocks (see above); the default comes from SEG_CUDA_POISON_FREED.
void set_cuda_poison_freed(bool on);
bool cuda_poison_freed();

// The CUDA allocators, for allocator_for() (core/cuda_allocator.cpp; absent without CUDA).
Allocator& cuda_device_allocator(Device device);
Allocator& cuda_pinned_allocator();
bool cuda_pinned_owns(const void* ptr);

}  // namespace seg
