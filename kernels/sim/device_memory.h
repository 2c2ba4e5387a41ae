// Simulated device memory: what cudaMalloc, cudaMallocManaged and cudaMallocHost return, and the
// registry of live and recently freed allocations that lets the runtime check pointers (cudaMemcpy
// ranges, cudaFree of unknown pointers, cudaPointerGetAttributes) and lets the pointer checks of
// kernel code (access_check.h) say what an address is.
//
// Allocations are 256-byte aligned like cudaMalloc's and filled with 0xFF bytes (reads of memory
// never written give NaN or -1). Each records the device it belongs to (pinned host memory: the
// device that was current when it was allocated, as cudaPointerGetAttributes reports it), the code
// address that called the runtime and the call stack that made it. Outside ASan builds a device
// allocation ends 0-255 bytes before a PROT_NONE guard page, so uninstrumented code reading or
// writing past the end faults (signals.cpp explains which allocation), and writes into the rounding
// slack are found after the launch; instrumented kernel code is stopped at the access itself
// (access_check.cpp). A freed device allocation keeps its address range reserved (PROT_NONE) in a
// quarantine of the most recent frees, so a later access through a stale pointer is recognised as a
// use after free, with the call stack of the free, instead of landing in a new allocation. Under
// ASan the memory comes from the ASan allocator instead (exact redzones, ASan's own quarantine); the
// registry and quarantine are kept all the same.
//
// While host code runs, device allocations (not managed, not pinned) are inaccessible: their pages
// are PROT_NONE (under ASan: poisoned), and the stream executor opens them only while it runs
// queued work (set_device_memory_accessible), so host code that dereferences a device pointer
// faults and signals.cpp explains it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace seg::sim::detail {

enum class MemoryKind { device, managed, pinned_host };
const char* memory_kind_name(MemoryKind kind);  // "device", "managed", "pinned host"

// `device`: the simulated device the memory belongs to (pinned host memory: the device that was
// current when it was allocated). `caller`: the code address that called the runtime, for reports.
void* allocate_memory(size_t bytes, MemoryKind kind, int device = 0, const void* caller = nullptr);
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
// Likewise: the quarantined (freed) allocation whose reserved range holds `addr`.
bool freed_block_owner(const void* addr, uintptr_t* begin, size_t* bytes);

// Call stacks of allocations and frees: return addresses, innermost first (0 = unused).
struct CallStack {
  static constexpr int kFrames = 10;
  uintptr_t pc[kFrames] = {};
};
// "f() <- g() <- h()", skipping the simulator's own frames and the cudaMalloc/cudaFree entry points.
std::string describe_call_stack(const CallStack& stack, int max_frames = 3);

struct AllocationRecord {
  uintptr_t begin = 0;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::device;
  int device = 0;
  CallStack allocated_by;
  CallStack freed_by;  // freed records only
};

// What the registry knows about an address: the live allocation containing it, or else the live
// allocations just before and after it, and the freed allocation (in quarantine) containing it.
struct AddressLookup {
  bool live = false;  // `allocation` contains the address ([begin, begin + bytes))
  AllocationRecord allocation;
  bool has_before = false, has_after = false;  // nearest live allocations around the address
  AllocationRecord before, after;
  bool freed = false;  // `freed_allocation` is a freed block whose range (still reserved) contains the address
  AllocationRecord freed_allocation;
};
AddressLookup look_up_address(uintptr_t address);

// The live allocation containing `address` (fast path of the pointer checks); false if none.
bool live_allocation_containing(uintptr_t address, AllocationRecord* record);

struct AllocationInfo {
  uintptr_t begin = 0;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::device;
  int device = 0;                // pinned host memory: the device current at allocation
  const void* caller = nullptr;  // code address that called the allocating runtime function
};
// The live allocation that contains p (any kind).
bool find_allocation(const void* p, AllocationInfo* info);
// The same for the SIGSEGV handler: fails when the registry is busy.
bool try_find_allocation(const void* p, AllocationInfo* info);
// Bytes of device and managed memory allocated on `device`, and the number of those allocations.
size_t allocated_device_bytes(int device);
size_t allocation_count(int device);
// Opens (true) or closes (false) every device allocation to host code; new allocations start in
// the current state. Closing is PROT_NONE on the pages of guarded allocations, ASan poison under ASan.
void set_device_memory_accessible(bool accessible);

}  // namespace seg::sim::detail
