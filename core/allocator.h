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
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/device.h"

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

}  // namespace seg
