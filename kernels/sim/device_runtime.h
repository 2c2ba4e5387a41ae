// The interface between kernel-side code (the intrinsics headers that .cu files see) and the
// simulator runtime (.cpp files). Internal: kernels call __syncthreads(), __shfl_sync(), ..., never
// these functions directly.
//
// Every blocking operation is a call into the runtime, which suspends the calling simulated thread
// (a fiber) and runs another one. Source locations travel with each call so that reports can say
// which line each thread is waiting at.
#pragma once

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>

#include "kernels/sim/sim.h"

// Marks runtime code that lives in headers (templates instantiated in .cu files) as not
// instrumented for the pointer checks (access_check.h): code that reads other lanes' data on their
// stacks, or moves a whole WMMA tile on the warp's behalf after checking it once.
#define SEG_SIM_NO_ACCESS_CHECKS __attribute__((no_sanitize_address))

namespace seg::sim::detail {

using Where = std::source_location;

// ---- block level ----------------------------------------------------------------------------
enum class BarrierOp : uint8_t { sync, count, all, any };
// Waits until every live thread of the block arrives; returns the variant's result.
int block_barrier(BarrierOp op, int predicate, const Where& where);

// ---- warp level: one generic collective ------------------------------------------------------
// Each lane passes its inputs and where its outputs go; they live on the lane's own stack and stay
// valid while it waits. When the last expected lane arrives, that lane runs `complete` once for the
// whole warp. One barrier per collective, no shared buffer to reuse, no ordering hazard.
struct LaneArgs {
  const void* in = nullptr;
  void* out = nullptr;
  int64_t arg = 0;
};

struct WarpOpView {
  uint32_t mask = 0;
  uint32_t participants = 0;  // lanes that took part (the mask minus exited or nonexistent lanes)
  uint32_t exists = 0;        // lanes that exist in this (possibly partial) warp
  uint32_t exited = 0;        // lanes that have exited
  LaneArgs* lanes[32] = {};   // nullptr for lanes that did not take part
  const void* uniform = nullptr;
  bool strict = false;
  unsigned warp = 0;
  const char* name = "";
  Where where;
};
using WarpOpComplete = void (*)(WarpOpView& view);

struct WarpOpDesc {
  const char* name;         // for reports: "__shfl_xor_sync", "wmma::mma_sync", ...
  WarpOpComplete complete;  // also identifies the operation: lanes must agree on it
  uint32_t mask;
  const void* uniform;  // arguments every lane must pass identically (compared bytewise)
  uint32_t uniform_bytes;
  bool full_warp;  // WMMA and PTX warp ops: all 32 lanes must take part
};
void warp_collective(const WarpOpDesc& op, LaneArgs& mine, const Where& where);

// Reading lane `src` in a completed collective when it did not take part: strict mode faults,
// otherwise the read is counted and the caller fills the result with the poison pattern 0xFF.
void inactive_lane_read(const WarpOpView& view, unsigned reader, unsigned src);

// ---- the calling simulated thread -----------------------------------------------------------
unsigned lane_id();
uint32_t live_lanes_mask();  // lanes of the caller's warp that exist and have not exited

// The device the running kernel was launched on, and whether it may touch memory that belongs to
// `device`: its own, or a peer's whose access was enabled (cudaDeviceEnablePeerAccess) when the
// launch started. For per-access checks; the registry gives each allocation's device.
int launch_device();
bool launch_may_access_device(int device);

// Reports a fault in the calling simulated thread and abandons the launch (SEG_LAUNCH throws).
[[noreturn]] void fault(FaultKind kind, const std::string& what, const Where& where);

// ---- memory ----------------------------------------------------------------------------------
void* dynamic_smem(size_t alignment, size_t byte_offset, const Where& where);
// Whether [p, p + bytes) lies inside one live cudaMalloc/cudaMallocManaged allocation.
bool is_device_allocation(const void* p, size_t bytes);
bool overlaps_device_allocation(const void* p, size_t bytes);

}  // namespace seg::sim::detail
