// Simulated device memory: what cudaMalloc, cudaMallocManaged and cudaMallocHost return, and the
// registry of live and recently freed allocations that lets the runtime check pointers (cudaMemcpy
// ranges, cudaFree of unknown pointers, cudaPointerGetAttributes) and lets the pointer checks of
// kernel code (access_check.h) say what an address is.
//
// Allocations are 256-byte aligned like cudaMalloc's and filled with 0xFF bytes (reads of memory
// never written give NaN or -1). Each records the device it belongs to (0 until several devices are
// simulated) and the call stack that made it. Outside ASan builds a device allocation ends 0-255
// bytes before a PROT_NONE guard page, so uninstrumented code reading or writing past the end
// faults (signals.cpp explains which allocation), and writes into the rounding slack are found
// after the launch; instrumented kernel code is stopped at the access itself (access_check.cpp).
// A freed device allocation keeps its address range reserved (PROT_NONE) in a quarantine of the
// most recent frees, so a later access through a stale pointer is recognised as a use after free,
// with the call stack of the free, instead of landing in a new allocation. Under ASan the memory
// comes from the ASan allocator instead (exact redzones, ASan's own quarantine); the registry and
// quarantine are kept all the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace seg::sim::detail {

enum class MemoryKind { device, managed, pinned_host };
const char* memory_kind_name(MemoryKind kind);  // "device", "managed", "pinned host"

// `device`: the simulated device the memory belongs to (pinned host memory: the device that was
// current when it was allocated).
void* allocate_memory(size_t bytes, MemoryKind kind, int device = 0);
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
  bool freed = false;  // `freed_allocation` is a freed block whose range contains the address
  AllocationRecord freed_allocation;
};
AddressLookup look_up_address(uintptr_t address);

// The live allocation containing `address` (fast path of the pointer checks); false if none.
bool live_allocation_containing(uintptr_t address, AllocationRecord* record);

}  // namespace seg::sim::detail
