// Emulation of ldmatrix, mma.sync m16n8k16 and m16n8k8 (TF32) and cp.async (layouts documented in ptx_emulation.h).
#include "kernels/sim/ptx_emulation.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernels/sim/access_check.h"
#include "kernels/sim/counter_hooks.h"
#include "kernels/sim/device_memory.h"
#include "kernels/sim/worker.h"

namespace seg::sim::ptx {

using seg::sim::detail::LaneArgs;
using seg::sim::detail::WarpOpView;

namespace {

std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

struct LdmatrixUniform {
  int32_t matrices;
  int32_t transpose;
};

// lanes[l]->in: the 8 b16 values of the row lane l addressed (if it addressed one);
// lanes[l]->out: lane l's `matrices` destination registers.
void ldmatrix_complete(WarpOpView& v) {
  const auto& u = *static_cast<const LdmatrixUniform*>(v.uniform);
  for (unsigned l = 0; l < 32; ++l) {
    auto* regs = static_cast<uint32_t*>(v.lanes[l]->out);
    for (int m = 0; m < u.matrices; ++m) {
      uint16_t pair[2];
      for (int h = 0; h < 2; ++h) {
        const unsigned row = u.transpose ? 2 * (l % 4) + h : l / 4;
        const unsigned col = u.transpose ? l / 4 : 2 * (l % 4) + h;
        const auto* row_data = static_cast<const uint16_t*>(v.lanes[8 * m + row]->in);
        pair[h] = row_data[col];
      }
      regs[m] = static_cast<uint32_t>(pair[0]) | (static_cast<uint32_t>(pair[1]) << 16);
    }
  }
}

struct MmaIn {
  uint32_t a[4];
  uint32_t b[2];
  float c[4];
};

float element(uint32_t reg, int half, bool bf16) {
  const auto bits = static_cast<unsigned short>(half ? reg >> 16 : reg & 0xFFFFu);
  return bf16 ? __bfloat162float(__ushort_as_bfloat16(bits)) : __half2float(__ushort_as_half(bits));
}

// D = A*B + C of an m16n8kK mma.sync into each lane's four D registers (the C/D layout of both
// shapes: d0, d1 row g, columns 2t, 2t+1; d2, d3 row g+8): products exact, summed in float in k order.
template <int K>
void mma_result(WarpOpView& v, const float (&A)[16][K], const float (&B)[K][8], const float (&C)[16][8]) {
  for (unsigned l = 0; l < 32; ++l) {
    auto* d = static_cast<float*>(v.lanes[l]->out);
    const unsigned g = l / 4, t = l % 4;
    for (int i = 0; i < 4; ++i) {
      const unsigned row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
      float acc = C[row][col];
      for (int k = 0; k < K; ++k) acc = std::fma(A[row][k], B[k][col], acc);
      d[i] = acc;
    }
  }
}

void mma_complete(WarpOpView& v) {
  const bool bf16 = *static_cast<const int32_t*>(v.uniform) != 0;
  float A[16][16], B[16][8], C[16][8];
  for (unsigned l = 0; l < 32; ++l) {
    const auto& in = *static_cast<const MmaIn*>(v.lanes[l]->in);
    const unsigned g = l / 4, t = l % 4;
    for (int i = 0; i < 8; ++i) {
      const unsigned row = g + ((i / 2) % 2 ? 8 : 0);
      const unsigned col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
      A[row][col] = element(in.a[i / 2], i % 2, bf16);
    }
    for (int i = 0; i < 4; ++i) {
      const unsigned k = 2 * t + (i & 1) + (i >= 2 ? 8 : 0);
      B[k][g] = element(in.b[i / 2], i % 2, bf16);
    }
    for (int i = 0; i < 4; ++i) C[g + (i >= 2 ? 8 : 0)][2 * t + (i & 1)] = in.c[i];
  }
  mma_result(v, A, B, C);
  seg::sim::detail::count_mma(16, 8, 16, false);
}

// The TF32 operand as the tensor cores use it: the float's top 19 bits (sign, exponent, 10 mantissa
// bits), the low 13 ignored.
float tf32_operand(uint32_t reg) {
  const uint32_t bits = reg & 0xFFFFE000u;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// m16n8k8 TF32: A 16x8 (a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)), B 8x8 (b0 (t, g),
// b1 (t+4, g)), C/D as m16n8k16.
void mma_tf32_complete(WarpOpView& v) {
  float A[16][8], B[8][8], C[16][8];
  for (unsigned l = 0; l < 32; ++l) {
    const auto& in = *static_cast<const MmaIn*>(v.lanes[l]->in);
    const unsigned g = l / 4, t = l % 4;
    for (int i = 0; i < 4; ++i) A[g + (i % 2 ? 8 : 0)][t + (i >= 2 ? 4 : 0)] = tf32_operand(in.a[i]);
    for (int i = 0; i < 2; ++i) B[t + (i ? 4 : 0)][g] = tf32_operand(in.b[i]);
    for (int i = 0; i < 4; ++i) C[g + (i >= 2 ? 8 : 0)][2 * t + (i & 1)] = in.c[i];
  }
  mma_result(v, A, B, C);
  seg::sim::detail::count_mma(16, 8, 8, true);
}

seg::sim::detail::CpAsyncState& cp_async_state(const char* what) {
  return seg::sim::detail::running_worker(what).current->cp_async;
}

// Lands the oldest committed group.
void land_oldest_group(seg::sim::detail::CpAsyncState& s) {
  const size_t n = s.groups.front();
  for (size_t i = 0; i < n; ++i) std::memcpy(s.copies[i].dst, s.copies[i].data, s.copies[i].bytes);
  s.copies.erase(s.copies.begin(), s.copies.begin() + static_cast<std::ptrdiff_t>(n));
  s.groups.erase(s.groups.begin());
}

}  // namespace

namespace detail {

bool ldmatrix_lane_reads_row(int matrices, const void* row_address, const Where& where) {
  const unsigned lane = seg::sim::detail::lane_id();
  if (lane >= 8u * static_cast<unsigned>(matrices)) return false;  // lanes whose address .xN ignores
  if (reinterpret_cast<uintptr_t>(row_address) % 16 != 0)
    seg::sim::detail::fault(FaultKind::misaligned,
                            "ldmatrix: row address " + pointer_text(row_address) + " of lane " + std::to_string(lane) +
                                " is not 16-byte aligned",
                            where);
  if (seg::sim::detail::overlaps_device_allocation(row_address, 16))
    seg::sim::detail::fault(FaultKind::bad_address,
                            "ldmatrix: row address " + pointer_text(row_address) + " of lane " + std::to_string(lane) +
                                " is global memory (a cudaMalloc allocation); ldmatrix reads shared memory",
                            where);
  return true;
}

void ldmatrix_collective(const uint16_t (&row)[8], uint32_t* regs, int matrices, bool transpose, const Where& where) {
  if (matrices != 1 && matrices != 2 && matrices != 4)
    seg::sim::detail::fault(FaultKind::bad_argument,
                            "ldmatrix: .x" + std::to_string(matrices) + " is not .x1, .x2 or .x4", where);
  const LdmatrixUniform uniform{matrices, transpose ? 1 : 0};
  LaneArgs args{row, regs, 0};
  seg::sim::detail::warp_collective(
      {transpose ? "ldmatrix.trans" : "ldmatrix", &ldmatrix_complete, 0xFFFFFFFFu, &uniform, sizeof uniform, true},
      args, where);
}

void cp_async_check(void* dst, const void* src, int cp_size, int src_size, const Where& where) {
  using seg::sim::detail::fault;
  using seg::sim::detail::MemorySpace;
  if (cp_size != 4 && cp_size != 8 && cp_size != 16)
    fault(FaultKind::bad_argument, "cp.async: cp-size " + std::to_string(cp_size) + " is not 4, 8 or 16", where);
  if (src_size < 0 || src_size > cp_size)
    fault(FaultKind::bad_argument, "cp.async: src-size " + std::to_string(src_size) + " is not in [0, cp-size]", where);
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  if (d % static_cast<uintptr_t>(cp_size) != 0 || s % static_cast<uintptr_t>(cp_size) != 0)
    fault(FaultKind::misaligned,
          "cp.async: destination " + pointer_text(dst) + " or source " + pointer_text(src) +
              " is not aligned to the copy size " + std::to_string(cp_size),
          where);
  // The pointer checks first: they tell a freed or overrun source from one in host memory.
  MemorySpace source_space = MemorySpace::global;
  if (src_size > 0)
    source_space = seg::sim::detail::check_runtime_access(src, static_cast<size_t>(src_size), false, "cp.async", where);
  if (src_size > 0 && !seg::sim::detail::is_device_allocation(src, static_cast<size_t>(src_size)))
    fault(FaultKind::bad_address,
          "cp.async: source " + pointer_text(src) + " (" + std::to_string(src_size) +
              " bytes) is not inside a cudaMalloc allocation; cp.async copies from global memory",
          where);
  if (seg::sim::detail::overlaps_device_allocation(dst, static_cast<size_t>(cp_size)))
    fault(FaultKind::bad_address,
          "cp.async: destination " + pointer_text(dst) +
              " is global memory (a cudaMalloc allocation); cp.async writes shared memory",
          where);
  seg::sim::detail::check_runtime_access(dst, static_cast<size_t>(cp_size), true, "cp.async", where);
  // Counted as the global load it is (the shared-memory side is not counted). The call site in
  // the kernel groups the lanes' copies into requests, like an instrumented access.
  if (seg::sim::detail::counting() && src_size > 0) {
    seg::sim::detail::Worker& w = seg::sim::detail::running_worker("cp.async");
    seg::sim::detail::count_access(w, *w.current, source_space, reinterpret_cast<uintptr_t>(src),
                                   static_cast<uint32_t>(src_size), false,
                                   reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
  }
}

void cp_async_issue(void* dst, const unsigned char (&data)[16], int cp_size) {
  seg::sim::detail::CpAsyncCopy copy{dst, static_cast<uint8_t>(cp_size), {}};
  std::memcpy(copy.data, data, sizeof copy.data);
  seg::sim::detail::CpAsyncState& state = cp_async_state("cp.async");
  state.copies.push_back(copy);
  ++state.uncommitted;
}

}  // namespace detail

void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4], bool bf16,
                  const Where& where) {
  MmaIn in;
  std::memcpy(in.a, a, sizeof in.a);
  std::memcpy(in.b, b, sizeof in.b);
  std::memcpy(in.c, c, sizeof in.c);
  float out[4];
  const int32_t uniform = bf16 ? 1 : 0;
  LaneArgs args{&in, out, 0};
  seg::sim::detail::warp_collective({bf16 ? "mma.sync.m16n8k16.bf16" : "mma.sync.m16n8k16.f16", &mma_complete,
                                     0xFFFFFFFFu, &uniform, sizeof uniform, true},
                                    args, where);
  std::memcpy(d, out, sizeof out);
}

void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], const float (&c)[4],
                      const Where& where) {
  MmaIn in{};
  std::memcpy(in.a, a, sizeof in.a);
  std::memcpy(in.b, b, sizeof in.b);
  std::memcpy(in.c, c, sizeof in.c);
  float out[4];
  const int32_t uniform = 0;
  LaneArgs args{&in, out, 0};
  seg::sim::detail::warp_collective({"mma.sync.m16n8k8.tf32", &mma_tf32_complete, 0xFFFFFFFFu, &uniform, sizeof uniform, true},
                                    args, where);
  std::memcpy(d, out, sizeof out);
}

void cp_async_commit() {
  seg::sim::detail::CpAsyncState& s = cp_async_state("cp.async.commit_group");
  s.groups.push_back(s.uncommitted);
  s.uncommitted = 0;
}

void cp_async_wait_group(int pending_groups) {
  seg::sim::detail::CpAsyncState& s = cp_async_state("cp.async.wait_group");
  while (s.groups.size() > static_cast<size_t>(pending_groups < 0 ? 0 : pending_groups)) land_oldest_group(s);
}

void cp_async_wait_all() {
  cp_async_commit();
  cp_async_wait_group(0);
}

}  // namespace seg::sim::ptx

namespace seg::sim::detail {

bool is_device_allocation(const void* p, size_t bytes) {
  MemoryKind kind;
  return inside_allocation(p, bytes, &kind) && kind != MemoryKind::pinned_host;
}

bool overlaps_device_allocation(const void* p, size_t bytes) {
  const auto* c = static_cast<const char*>(p);
  MemoryKind kind;
  return (inside_allocation(c, 1, &kind) && kind != MemoryKind::pinned_host) ||
         (bytes > 1 && inside_allocation(c + bytes - 1, 1, &kind) && kind != MemoryKind::pinned_host);
}

}  // namespace seg::sim::detail
