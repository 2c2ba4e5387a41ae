// Performance counters of simulated kernel launches, the ones Nsight Compute shows, and an H200
// roofline estimate from them (roofline.h). Lesson and exact definitions: docs/cuda-simulator.md,
// section "Counters".
//
// Collected when Options::counters is set (or SEG_SIM_PROFILE is, which also prints them), in the
// default build only: there g++ instruments every memory access of kernel code
// (kernels/sim/CMakeLists.txt, access_check.cpp). Under ASan and TSan that instrumentation is off
// and counters_available() is false. What is counted:
//   * global (device memory, pinned/managed memory, __device__ variables) and shared (dynamic and
//     static __shared__) loads and stores as warp-level requests: the k-th execution of one access
//     site by the lanes of a warp, counted from the last point where the warp reconverged (a
//     barrier or a full-warp collective), is one request; lanes that execute it are its active lanes;
//   * global sectors: the distinct 32-byte segments a request touches (sectors per request shows
//     coalescing: 4 for 32 consecutive floats, 32 for a stride of 32 floats);
//   * shared wavefronts and bank conflicts: 32 banks of 4 bytes; a request of 4-byte (or smaller)
//     accesses is one phase of 32 lanes, 8-byte accesses two phases of 16 lanes, 16-byte accesses
//     four phases of 8 lanes; a phase takes as many wavefronts as the largest number of distinct
//     4-byte words it touches in one bank (one word read by many lanes is a broadcast, free);
//     bank conflicts = wavefronts - phases;
//   * WMMA loads and stores as the 16-byte row chunks an ldmatrix-like sequence would move;
//     cp.async as a global load request of its copy size;
//   * tensor-core MMAs (wmma::mma_sync, mma.sync m16n8k16) and their FLOPs, 2 x M x N x K each;
//   * FP32 FMAs written as __fmaf_rn (plain `a * b + c`, which nvcc fuses, is invisible here);
//   * completed __syncthreads (per block), warp collectives, and the active lanes of every counted
//     warp-level instruction (requests and collectives): the divergence measure.
// Accesses to a thread's own stack (locals) and to the kernel parameters are not counted; neither
// are memcpy/memset calls that g++ leaves out of line in kernel code. A store to an address the
// same basic block has just loaded (`y[i] += v`) is not seen: g++ checks an address once.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/sim/roofline.h"

namespace seg::sim {

struct MemoryCounters {
  uint64_t requests = 0;  // warp-level instructions
  uint64_t sectors = 0;   // global: 32-byte sectors moved; shared: wavefronts
  uint64_t bytes = 0;     // bytes the lanes asked for
  uint64_t bank_conflicts = 0;  // shared only: wavefronts beyond one per phase
  double per_request() const { return requests ? static_cast<double>(sectors) / static_cast<double>(requests) : 0; }
};

struct KernelCounters {
  std::string kernel;       // as written at SEG_LAUNCH
  // The entry point's demangled name from the executable's symbol table, empty when unknown. Where
  // a generic launcher writes SEG_LAUNCH(kernel, ...) for many template instances (the tensor-core
  // GEMMs' device_launch.h), this is what tells them apart: totals are kept per (kernel, symbol).
  std::string symbol;
  std::string launch_site;  // file:line of the (first) launch
  dim3 grid{0, 0, 0}, block{0, 0, 0};
  size_t dynamic_smem_bytes = 0;
  uint64_t launches = 0;
  uint64_t blocks = 0, threads = 0, warps = 0;

  MemoryCounters global_load, global_store;
  uint64_t global_unique_sectors = 0;  // distinct 32-byte sectors the launch touched
  MemoryCounters shared_load, shared_store;  // sectors = wavefronts

  uint64_t mma_instructions = 0;   // warp-level MMA operations as written (wmma::mma_sync, mma.sync)
  uint64_t tensor_f16_flops = 0;   // f16 and bf16 inputs
  uint64_t tensor_tf32_flops = 0;  // tf32 inputs
  uint64_t fp32_fma = 0;           // __fmaf_rn calls

  uint64_t barriers = 0;           // completed __syncthreads, summed over blocks
  uint64_t warp_collectives = 0;   // shuffles, votes, __syncwarp, WMMA and PTX warp operations
  uint64_t warp_instructions = 0;  // counted memory requests + collectives
  uint64_t active_lanes = 0;       // summed over warp_instructions
  double active_lane_share() const {
    return warp_instructions ? static_cast<double>(active_lanes) / (32.0 * static_cast<double>(warp_instructions)) : 0;
  }

  int registers_per_thread = -1;  // -1: unknown (no nvcc resource table for this kernel)
  size_t static_smem_bytes = 0;   // from nvcc's table, else from the executable's symbol table
  bool static_smem_known = false;

  RooflineEstimate estimate;    // H200, for one launch (the average launch, in totals)
  double estimated_us_sum = 0;  // the estimates of all launches added up (totals)
};

// Whether this build counts (instrumented kernel code: the default build, not ASan or TSan).
bool counters_available();
// The counters of the calling host thread's last launch that ran without a fault (a launch that
// faults records nothing). Launches are queued: like last_launch_stats() this runs the queued work
// the thread's last launch needs and throws its KernelFault, if one is pending. All zero when that
// launch was not counted (Options::counters off, or an ASan/TSan build) or when the thread has
// launched nothing.
KernelCounters last_launch_counters();
// Every counted launch since the start or the last reset, summed per kernel (the launch text and
// the entry point's symbol; first launch order); `estimate` is that of the average launch.
std::vector<KernelCounters> kernel_counter_totals();
void reset_kernel_counter_totals();
// The table SEG_SIM_PROFILE prints for one launch (or one total).
std::string format_counters(const KernelCounters& counters);
// The name the profile prints: the symbol without namespaces, return type and parameter list, as
// Nsight names kernels ("gemm_tc_kernel<GemmKernel<float, TileShape<64, 64, 16, 2, 2, 3>, ...> >"),
// else the launch text.
std::string kernel_display_name(const KernelCounters& counters);

}  // namespace seg::sim
