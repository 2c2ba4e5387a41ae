// Simulated device memory: what cudaMalloc, cudaMallocManaged and cudaMallocHost return, and the
// registry of live allocations that lets the runtime check pointers (cudaMemcpy ranges, cudaFree of
// unknown pointers, cp.async sources, ldmatrix/cp.async destinations that are not shared memory).
//
// Allocations are 256-byte aligned like cudaMalloc's and filled with 0xFF bytes (reads of memory
// never written give NaN or -1). Outside ASan builds a device allocation ends 0-255 bytes before a
// PROT_NONE guard page, so a kernel reading or writing past the end faults (signals.cpp explains
// which allocation), and writes into the rounding slack are found after the launch. Under ASan the
// allocation comes from the ASan allocator instead, whose redzones report overflows exactly.
//
// Each allocation belongs to a device (pinned host memory: -1) and remembers the code address that
// called cudaMalloc. While host code runs, device allocations (not managed, not pinned) are
// inaccessible: their pages are PROT_NONE (under ASan: poisoned), and the stream executor opens
// them only while it runs queued work (set_device_memory_accessible), so host code that
// dereferences a device pointer faults and signals.cpp explains it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace seg::sim::detail {

enum class MemoryKind { device, managed, pinned_host };

void* allocate_memory(size_t bytes, MemoryKind kind);
void* allocate_memory(size_t bytes, MemoryKind kind, int device, const void* caller);
// False when `p` is not the start of a live allocation of that kind.
bool free_memory(void* p, MemoryKind kind);
// Whether [p, p + bytes) lies inside one live allocation of any kind.
bool inside_allocation(const void* p, size_t bytes, MemoryKind* kind = nullptr);
size_t allocated_device_bytes();
// Describes writes past the end of allocations since the last check ("" when none).
std::string check_allocation_slack();
// For the SIGSEGV handler (async-signal-safe, may fail): the allocation whose guard page holds
// `addr`. Returns false when none or when the registry is busy.
bool guard_page_owner(const void* addr, uintptr_t* begin, size_t* bytes);

struct AllocationInfo {
  uintptr_t begin = 0;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::device;
  int device = 0;                // -1 for pinned host memory
  const void* caller = nullptr;  // code address that called the allocating runtime function
};
// The live allocation that contains p (any kind).
bool find_allocation(const void* p, AllocationInfo* info);
// The same for the SIGSEGV handler: fails when the registry is busy.
bool try_find_allocation(const void* p, AllocationInfo* info);
// Bytes of device and managed memory allocated on `device`, and the number of its allocations.
size_t allocated_device_bytes(int device);
size_t allocation_count(int device);
// Opens (true) or closes (false) every device allocation to host code; new allocations start in
// the current state. Closing is PROT_NONE on the pages of guarded allocations, ASan poison under ASan.
void set_device_memory_accessible(bool accessible);

}  // namespace seg::sim::detail
