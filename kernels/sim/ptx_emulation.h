// Emulation of the PTX instructions behind the project's helpers in kernels/cuda/ptx.h, with the
// exact per-lane data layouts of the PTX ISA (section "Warp-level matrix instructions").
//
//   ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16
//     Lanes 8m..8m+7 give the addresses of rows 0..7 of matrix m (each row: 8 b16 = 16 bytes,
//     16-byte aligned). Register m of lane l receives row l/4, columns 2*(l%4) and 2*(l%4)+1 of
//     matrix m (lower column in the low half); with .trans, rows and columns swap.
//   mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32
//     groupID g = lane/4, t = lane%4. A (16x16, 4 regs of 2 elements a0..a7): row g for a0,a1,a4,a5
//     and g+8 for a2,a3,a6,a7; column 2t+(i&1), +8 for a4..a7. B (16x8, 2 regs b0..b3): row
//     2t+(i&1), +8 for b2,b3; column g. C/D (16x8 floats c0..c3): row g, +8 for c2,c3; column 2t+(i&1).
//     Products are exact and accumulated in float in k order (tensor cores may round differently
//     in the last bits).
//   mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
//     One 32-bit element per register. A (16x8, a0..a3): row g for a0, a2 and g+8 for a1, a3;
//     column t for a0, a1 and t+4 for a2, a3. B (8x8, b0, b1): row t, +4 for b1; column g. C/D as
//     m16n8k16. Each operand is used as TF32, its low 13 bits ignored (what the hardware does;
//     rounding to nearest first is the caller's business), products exact, accumulated in float.
//   cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}; cp.async.commit_group;
//   cp.async.wait_group N; cp.async.wait_all
//     The source is read when the copy is issued; the data lands in shared memory only when a
//     wait_group that covers its group runs. This is the latest moment the PTX ISA allows, so a
//     kernel that reads the destination before waiting sees stale data, as it may on a GPU.
//     Bytes past src-size are zero-filled. Copies a thread never waits for are dropped when it exits.
// Checks: ldmatrix and mma.sync need all 32 lanes (divergent_collective); ldmatrix row addresses
// and cp.async addresses must be aligned (misaligned); ldmatrix and cp.async destinations must not
// be global memory and cp.async sources must lie inside a cudaMalloc allocation (bad_address).
#pragma once

#include <cstdint>
#include <cstring>
#include <source_location>

#include "kernels/sim/device_runtime.h"

namespace seg::sim::ptx {

using Where = std::source_location;

namespace detail {
// Runtime parts (ptx_emulation.cpp). The reads of shared and global memory happen in the inline
// functions below, i.e. in the kernel's own code, so that ASan and TSan check them there.
bool ldmatrix_lane_reads_row(int matrices, const void* row_address, const Where& where);
void ldmatrix_collective(const uint16_t (&row)[8], uint32_t* regs, int matrices, bool transpose, const Where& where);
void cp_async_check(void* shared_dst, const void* global_src, int cp_size, int src_size, const Where& where);
void cp_async_issue(void* shared_dst, const unsigned char (&data)[16], int cp_size);
}  // namespace detail

inline void ldmatrix(uint32_t* regs, int matrices, bool transpose, const void* row_address, const Where& where) {
  uint16_t row[8] = {};
  if (detail::ldmatrix_lane_reads_row(matrices, row_address, where)) std::memcpy(row, row_address, sizeof row);
  detail::ldmatrix_collective(row, regs, matrices, transpose, where);
}

void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4], bool bf16,
                  const Where& where);
void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
                      const Where& where);

inline void cp_async(void* shared_dst, const void* global_src, int cp_size, int src_size, const Where& where) {
  detail::cp_async_check(shared_dst, global_src, cp_size, src_size, where);
  unsigned char data[16] = {};
  std::memcpy(data, global_src, static_cast<size_t>(src_size));  // the source is read at issue
  detail::cp_async_issue(shared_dst, data, cp_size);
}
void cp_async_commit();
void cp_async_wait_group(int pending_groups);
void cp_async_wait_all();

}  // namespace seg::sim::ptx
