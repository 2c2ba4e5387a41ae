#include "kernels/sim/roofline.h"

#include <algorithm>
#include <cmath>

namespace seg::sim {

RooflineEstimate estimate_h200(const RooflineInput& in) {
  RooflineEstimate e;
  const int warps = static_cast<int>((in.threads_per_block + 31) / 32);
  if (warps == 0 || in.blocks == 0) return e;

  // Occupancy: the tightest of the per-SM limits.
  int blocks = H200::max_blocks_per_sm;
  e.occupancy_limit = "blocks per SM";
  const int by_warps = H200::max_warps_per_sm / warps;
  if (by_warps < blocks) {
    blocks = by_warps;
    e.occupancy_limit = "threads";
  }
  const uint64_t smem = (in.shared_bytes_per_block + H200::reserved_shared_per_block + 127) / 128 * 128;
  const int by_smem = static_cast<int>(H200::shared_bytes_per_sm / smem);
  if (by_smem < blocks) {
    blocks = by_smem;
    e.occupancy_limit = "shared memory";
  }
  if (in.registers_per_thread > 0) {
    // Registers are allocated per warp in units of 256, from four 16384-register sub-partitions.
    const int per_warp = (in.registers_per_thread * 32 + 255) / 256 * 256;
    const int warps_by_regs = 4 * (H200::registers_per_sm / 4 / per_warp);
    const int by_regs = warps_by_regs / warps;
    if (by_regs < blocks) {
      blocks = by_regs;
      e.occupancy_limit = "registers";
    }
  }
  e.blocks_per_sm = std::max(blocks, 0);
  if (e.blocks_per_sm == 0) return e;  // cannot launch (the launch checks would have refused it)
  e.occupancy = static_cast<double>(e.blocks_per_sm * warps) / H200::max_warps_per_sm;
  const uint64_t slots = static_cast<uint64_t>(H200::sms) * static_cast<uint64_t>(e.blocks_per_sm);
  e.waves = (in.blocks + slots - 1) / slots;
  e.grid_factor = in.blocks < static_cast<uint64_t>(H200::sms)
                      ? static_cast<double>(H200::sms) / static_cast<double>(in.blocks)
                      : (in.blocks > slots ? static_cast<double>(e.waves * slots) / static_cast<double>(in.blocks) : 1.0);

  e.dram_from_unique = static_cast<double>(in.unique_sector_bytes) <= H200::l2_bytes;
  e.dram_bytes = static_cast<double>(e.dram_from_unique ? in.unique_sector_bytes : in.request_sector_bytes);
  e.memory_us = 1e6 * e.dram_bytes / H200::hbm_bytes_per_s;
  e.tensor_us = 1e6 * (static_cast<double>(in.tensor_f16_flops) / H200::tensor_f16_flops +
                       static_cast<double>(in.tensor_tf32_flops) / H200::tensor_tf32_flops);
  e.fp32_us = 1e6 * 2.0 * static_cast<double>(in.fp32_fma) / H200::fp32_flops;
  e.shared_us = 1e6 * static_cast<double>(in.shared_wavefronts) / (H200::sms * H200::clock_hz);
  const double compute = e.tensor_us + e.fp32_us;
  const double roof = std::max({e.memory_us, e.shared_us, compute}) * e.grid_factor;
  if (roof < H200::launch_floor_us) {
    e.estimate_us = H200::launch_floor_us;
    e.bound = "launch latency";
  } else {
    e.estimate_us = roof;
    if (e.memory_us >= e.shared_us && e.memory_us >= compute)
      e.bound = "memory";
    else if (e.shared_us >= compute)
      e.bound = "shared memory";
    else
      e.bound = e.tensor_us >= e.fp32_us ? "tensor cores" : "FP32";
  }
  return e;
}

}  // namespace seg::sim
