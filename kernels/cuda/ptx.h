// PTX helpers: the only place the project's CUDA code may use inline PTX (DESIGN decision 3).
//
// Each helper's nvcc body is the PTX instruction in inline asm (sm_80 and later); its simulator
// body (SEG_CUDA_SIM) is the exact emulation in kernels/sim/ptx_emulation.h, which documents the
// per-lane layouts of the PTX ISA. Kernels call these helpers, never asm() directly, so the same
// .cu file runs on the GPU and in the simulator.
//
//   ldmatrix_x1/x2/x4[_trans](regs, row)   lanes 8m..8m+7 pass the address of row 0..7 of matrix m
//                                         (16-byte aligned shared memory); all 32 lanes call it.
//   mma_m16n8k16_f16 / _bf16(d, a, b, c)   D(16x8, f32) = A(16x16) * B(16x8) + C, A row-major and B
//                                         column-major fragments as ldmatrix delivers them.
//   mma_m16n8k8_tf32(d, a, b, c)           D(16x8, f32) = A(16x8) * B(8x8) + C on TF32, one float per
//                                         register (a0 (g,t) a1 (g+8,t) a2 (g,t+4) a3 (g+8,t+4);
//                                         b0 (t,g) b1 (t+4,g)); the low 13 bits of each are ignored.
//   cp_async<4|8|16>(dst, src)             asynchronous global -> shared copy (.ca for 4 and 8
//                                         bytes, .cg for 16); cp_async_16_zfill copies src_bytes
//                                         (0..16) and zero-fills the rest (ragged tile edges).
//   cp_async_commit(), cp_async_wait_group<N>(), cp_async_wait_all()
//   wmma_load_m16n16k8_tf32_shared<'a'|'b', row, ldm>(regs, p)   nvcc only, see below
#pragma once

#include <cstdint>

#if defined(SEG_CUDA_SIM)
#include <source_location>

#include "kernels/sim/ptx_emulation.h"
// In the simulator every helper also receives its call site, for reports.
#define SEG_PTX_WHERE , const std::source_location& where = std::source_location::current()
#define SEG_PTX_DEVICE inline
#elif defined(__CUDACC__)
#define SEG_PTX_WHERE
#define SEG_PTX_DEVICE __device__ __forceinline__
#else
#error "kernels/cuda/ptx.h is included by .cu files only (nvcc, or g++ with the simulator)"
#endif

namespace seg::ptx {

#if defined(__CUDACC__)
// The 32-bit shared-state-space address of a generic pointer into shared memory.
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
#endif

// ---- ldmatrix -----------------------------------------------------------------------------------
SEG_PTX_DEVICE void ldmatrix_x1(uint32_t (&r)[1], const void* row SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::ldmatrix(r, 1, false, row, where);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(shared_address(row)));
#endif
}
SEG_PTX_DEVICE void ldmatrix_x2(uint32_t (&r)[2], const void* row SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::ldmatrix(r, 2, false, row, where);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(row)));
#endif
}
SEG_PTX_DEVICE void ldmatrix_x4(uint32_t (&r)[4], const void* row SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::ldmatrix(r, 4, false, row, where);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
#endif
}
SEG_PTX_DEVICE void ldmatrix_x1_trans(uint32_t (&r)[1], const void* row SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::ldmatrix(r, 1, true, row, where);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(shared_address(row)));
#endif
}
SEG_PTX_DEVICE void ldmatrix_x2_trans(uint32_t (&r)[2], const void* row SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::ldmatrix(r, 2, true, row, where);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(row)));
#endif
}
SEG_PTX_DEVICE void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::ldmatrix(r, 4, true, row, where);
#else
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
#endif
}

// ---- mma.sync m16n8k16, f32 accumulate -------------------------------------------------------------
SEG_PTX_DEVICE void mma_m16n8k16_f16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                     const float (&c)[4] SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::mma_m16n8k16(d, a, b, c, false, where);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, "
      "%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}
SEG_PTX_DEVICE void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                      const float (&c)[4] SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::mma_m16n8k16(d, a, b, c, true, where);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, "
      "%12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}

// ---- cp.async ------------------------------------------------------------------------------------
template <int Bytes>
SEG_PTX_DEVICE void cp_async(void* shared_dst, const void* global_src SEG_PTX_WHERE) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(SEG_CUDA_SIM)
  sim::ptx::cp_async(shared_dst, global_src, Bytes, Bytes, where);
#else
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared_dst)), "l"(global_src)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(shared_address(shared_dst)), "l"(global_src),
                 "n"(Bytes)
                 : "memory");
  }
#endif
}
// Copies src_bytes (0..16) and zero-fills the rest of the 16 destination bytes. With src_bytes == 0
// the source is not read, so a clamped or even invalid address is fine.
SEG_PTX_DEVICE void cp_async_16_zfill(void* shared_dst, const void* global_src, int src_bytes SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::cp_async(shared_dst, global_src, 16, src_bytes, where);
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared_dst)), "l"(global_src),
               "r"(src_bytes)
               : "memory");
#endif
}
SEG_PTX_DEVICE void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                     const float (&c)[4] SEG_PTX_WHERE) {
#if defined(SEG_CUDA_SIM)
  sim::ptx::mma_m16n8k8_tf32(d, a, b, c, where);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, "
      "%12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#endif
}
SEG_PTX_DEVICE void cp_async_commit() {
#if defined(SEG_CUDA_SIM)
  sim::ptx::cp_async_commit();
#else
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
SEG_PTX_DEVICE void cp_async_wait_group() {
#if defined(SEG_CUDA_SIM)
  sim::ptx::cp_async_wait_group(N);
#else
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
SEG_PTX_DEVICE void cp_async_wait_all() {
#if defined(SEG_CUDA_SIM)
  sim::ptx::cp_async_wait_all();
#else
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// ---- WMMA TF32 loads from shared memory (nvcc only) -------------------------------------------
// wmma.load of a 16x16x8 TF32 fragment (4 registers per lane) with the .shared state space. nvcc 13
// gives load_matrix_sync's f16/bf16 shapes the .shared form when the pointer is known to be in
// shared memory, but its TF32 shape always the generic one: ptxas then emits a 64-bit address
// computation and a generic LD per element (docs/tensor-cores.md, "TF32 fragments through
// generic loads"). The registers are the instruction's, in its order, exactly what
// load_matrix_sync would put in the fragment: the layout stays the library's. No simulator body:
// the simulator's WMMA fragments are its own (kernels/sim/wmma.h), so the caller
// (kernels/cuda/gemm/mma_fragment.h, load_tf32_fragment) runs load_matrix_sync there.
#if !defined(SEG_CUDA_SIM)
// M = 'a' or 'b' (the matrix), ROW: the layout in memory; LDM, the leading dimension in elements,
// is an immediate (a register stride left ptxas one address multiply per element).
template <char M, bool ROW, unsigned LDM>
__device__ __forceinline__ void wmma_load_m16n16k8_tf32_shared(uint32_t (&r)[4], const float* p) {
  static_assert(M == 'a' || M == 'b', "matrix a or b");
  const uint32_t addr = shared_address(p);
  if constexpr (M == 'a' && ROW)
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k8.shared.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr), "n"(LDM));
  else if constexpr (M == 'a')
    asm volatile("wmma.load.a.sync.aligned.col.m16n16k8.shared.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr), "n"(LDM));
  else if constexpr (ROW)
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k8.shared.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr), "n"(LDM));
  else
    asm volatile("wmma.load.b.sync.aligned.col.m16n16k8.shared.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr), "n"(LDM));
}
#endif

}  // namespace seg::ptx

#undef SEG_PTX_WHERE
#undef SEG_PTX_DEVICE
