// An H200 roofline estimate of a kernel launch from the simulator's counters (counters.h).
//
// An ESTIMATE from a model, never a measurement: the simulator runs on a CPU and knows nothing of
// the GPU's clocks, caches or latency hiding. The model (docs/cuda-simulator.md, "Counters"):
//   occupancy  blocks per SM = min(32, 64 warps / warps per block,
//                                  228 KiB / (static + dynamic shared + 1 KiB reserved, in 128 B units),
//                                  registers: 4 x floor(16384 / (regs per warp in 256-register units)) warps);
//              registers are left out when unknown (no nvcc table, kernel_resources.h).
//   work       DRAM bytes = the launch's distinct 32-byte sectors (each byte crosses HBM once: the
//              50 MB L2 holds the rest) when they fit in L2, else every sector the requests moved;
//              tensor FLOPs (2 per multiply-add) at 989 TFLOP/s dense f16/bf16, 494 TFLOP/s tf32;
//              counted FP32 FMAs (2 FLOPs each) at 67 TFLOP/s; shared-memory wavefronts at one
//              per SM and clock (132 SMs x 1.98 GHz boost), so bank conflicts cost time.
//   time       max(DRAM time at 4.8 TB/s, shared-memory time, tensor + FP32 time), scaled by the share of the GPU the
//              grid can use: 132 / blocks when fewer blocks than SMs, else the wave quantisation
//              waves x slots / blocks (slots = 132 x blocks per SM); and at least the launch
//              latency floor (2 us).
#pragma once

#include <cstdint>

namespace seg::sim {

// The device the estimate is for (public numbers of the H200 SXM).
struct H200 {
  static constexpr int sms = 132;
  static constexpr double hbm_bytes_per_s = 4.8e12;
  static constexpr double tensor_f16_flops = 989e12;   // dense f16/bf16 with f32 accumulation
  static constexpr double tensor_tf32_flops = 494e12;  // dense tf32
  static constexpr double fp32_flops = 67e12;          // FFMA, 2 FLOPs each
  static constexpr double clock_hz = 1.98e9;           // boost clock: one shared wavefront per SM and clock
  static constexpr double l2_bytes = 50e6;
  static constexpr int max_blocks_per_sm = 32;
  static constexpr int max_warps_per_sm = 64;
  static constexpr int registers_per_sm = 65536;
  static constexpr int shared_bytes_per_sm = 233472;  // 228 KiB
  static constexpr int reserved_shared_per_block = 1024;
  static constexpr double launch_floor_us = 2.0;
};

// What the model needs from a launch.
struct RooflineInput {
  uint64_t blocks = 0;
  unsigned threads_per_block = 0;
  uint64_t shared_bytes_per_block = 0;  // static + dynamic
  int registers_per_thread = -1;        // -1: unknown (not limiting)
  uint64_t unique_sector_bytes = 0;     // distinct 32-byte sectors x 32
  uint64_t request_sector_bytes = 0;    // every sector moved by every request x 32
  uint64_t tensor_f16_flops = 0;
  uint64_t tensor_tf32_flops = 0;
  uint64_t fp32_fma = 0;
  uint64_t shared_wavefronts = 0;
};

struct RooflineEstimate {
  int blocks_per_sm = 0;
  const char* occupancy_limit = "";  // "threads", "shared memory", "registers", "blocks per SM"
  double occupancy = 0;              // resident warps / 64
  uint64_t waves = 0;
  double grid_factor = 1;  // the share of the GPU the grid cannot use (>= 1)
  double dram_bytes = 0;
  bool dram_from_unique = true;  // false: the footprint exceeds L2, every requested sector counted
  double memory_us = 0, shared_us = 0, tensor_us = 0, fp32_us = 0;
  double estimate_us = 0;
  const char* bound = "";  // "memory", "shared memory", "tensor cores", "FP32", "launch latency"
};

RooflineEstimate estimate_h200(const RooflineInput& in);

}  // namespace seg::sim
