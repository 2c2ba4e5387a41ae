// Kernels of the simulator suite that use the PTX helpers of kernels/cuda/ptx.h: per-lane probes of
// ldmatrix, mma.sync and cp.async, and a GEMM that combines them the way tensor-core kernels do.
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/dynamic_smem.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ptx.h"
#include "tests/sim/sim_test_kernels.h"

namespace {

__global__ void ldmatrix_kernel(const uint16_t* src, const int* perm, uint32_t* out, int matrices, int transpose) {
  __shared__ __align__(16) uint16_t rows[32][8];
  const int lane = threadIdx.x;
  for (int c = 0; c < 8; ++c) rows[lane][c] = src[lane * 8 + c];
  __syncwarp();
  const void* row = &rows[perm[lane]][0];
  uint32_t r[4] = {0, 0, 0, 0};
  if (matrices == 1) {
    uint32_t x[1];
    if (transpose)
      seg::ptx::ldmatrix_x1_trans(x, row);
    else
      seg::ptx::ldmatrix_x1(x, row);
    r[0] = x[0];
  } else if (matrices == 2) {
    uint32_t x[2];
    if (transpose)
      seg::ptx::ldmatrix_x2_trans(x, row);
    else
      seg::ptx::ldmatrix_x2(x, row);
    r[0] = x[0];
    r[1] = x[1];
  } else {
    uint32_t x[4];
    if (transpose)
      seg::ptx::ldmatrix_x4_trans(x, row);
    else
      seg::ptx::ldmatrix_x4(x, row);
    for (int m = 0; m < 4; ++m) r[m] = x[m];
  }
  for (int m = 0; m < 4; ++m) out[4 * lane + m] = r[m];
}

__device__ uint32_t pack(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// Fragments straight from the PTX ISA's layout tables (groupID g, threadID_in_group t).
__global__ void mma_kernel(const uint16_t* a, const uint16_t* b, const float* c, float* d, int bf16) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  uint32_t ra[4], rb[2];
  float rc[4], rd[4];
  for (int reg = 0; reg < 4; ++reg) {
    const int row = g + (reg % 2 ? 8 : 0), col = 2 * t + (reg >= 2 ? 8 : 0);
    ra[reg] = pack(a[row * 16 + col], a[row * 16 + col + 1]);
  }
  for (int reg = 0; reg < 2; ++reg) {
    const int k = 2 * t + (reg ? 8 : 0);
    rb[reg] = pack(b[k * 8 + g], b[(k + 1) * 8 + g]);
  }
  for (int i = 0; i < 4; ++i) rc[i] = c[(g + (i >= 2 ? 8 : 0)) * 8 + 2 * t + (i & 1)];
  if (bf16)
    seg::ptx::mma_m16n8k16_bf16(rd, ra, rb, rc);
  else
    seg::ptx::mma_m16n8k16_f16(rd, ra, rb, rc);
  for (int i = 0; i < 4; ++i) d[(g + (i >= 2 ? 8 : 0)) * 8 + 2 * t + (i & 1)] = rd[i];
}

// m16n8k8 TF32 fragments straight from the PTX ISA's table (one float per register).
__global__ void mma_tf32_kernel(const float* a, const float* b, const float* c, float* d) {
  const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
  uint32_t ra[4], rb[2];
  float rc[4], rd[4];
  for (int reg = 0; reg < 4; ++reg) ra[reg] = __float_as_uint(a[(g + (reg % 2 ? 8 : 0)) * 8 + t + (reg >= 2 ? 4 : 0)]);
  for (int reg = 0; reg < 2; ++reg) rb[reg] = __float_as_uint(b[(t + (reg ? 4 : 0)) * 8 + g]);
  for (int i = 0; i < 4; ++i) rc[i] = c[(g + (i >= 2 ? 8 : 0)) * 8 + 2 * t + (i & 1)];
  seg::ptx::mma_m16n8k8_tf32(rd, ra, rb, rc);
  for (int i = 0; i < 4; ++i) d[(g + (i >= 2 ? 8 : 0)) * 8 + 2 * t + (i & 1)] = rd[i];
}

// One thread. Group 1: src[0..3] -> smem[0..3]; group 2: src[4..7] -> smem[4..7], zero-filled past
// src_bytes. out[0..3]: smem[0..3] before any wait; out[4..11]: smem[0..7] after wait_group<1>;
// out[12..19]: smem[0..7] after wait_all.
__global__ void cp_async_kernel(const float* src, float* out, int src_bytes) {
  float* smem = seg::dynamic_smem<float>();
  seg::ptx::cp_async<16>(smem, src);
  seg::ptx::cp_async_commit();
  seg::ptx::cp_async_16_zfill(smem + 4, src + 4, src_bytes);
  seg::ptx::cp_async_commit();
  for (int i = 0; i < 4; ++i) out[i] = smem[i];
  seg::ptx::cp_async_wait_group<1>();
  for (int i = 0; i < 8; ++i) out[4 + i] = smem[i];
  seg::ptx::cp_async_wait_all();
  for (int i = 0; i < 8; ++i) out[12 + i] = smem[i];
}

// ---- GEMM: 32 x 32 block tile, 4 warps of 16 x 16 (two m16n8 tiles each), K steps of 16 ----------
constexpr int kBM = 32, kBN = 32, kBK = 16, kStrideA = kBK + 8, kStrideB = kBN + 8;

__device__ void load_tiles(const __half* a, const __half* b, int m, int n, int k, int row0, int col0, int k0,
                           __half (*as)[kStrideA], __half (*bs)[kStrideB]) {
  const int t = threadIdx.x;
  if (t < 64) {  // A: 32 rows x 2 chunks of 8 halves
    const int r = t / 2, c = (t % 2) * 8;
    const int valid = (row0 + r < m) ? k - (k0 + c) : 0;
    const int bytes = valid <= 0 ? 0 : (valid >= 8 ? 16 : valid * 2);
    const __half* src = bytes ? a + static_cast<size_t>(row0 + r) * k + k0 + c : a;  // not read when bytes == 0
    seg::ptx::cp_async_16_zfill(&as[r][c], src, bytes);
  } else {  // B: 16 rows x 4 chunks of 8 halves
    const int e = t - 64, r = e / 4, c = (e % 4) * 8;
    const int valid = (k0 + r < k) ? n - (col0 + c) : 0;
    const int bytes = valid <= 0 ? 0 : (valid >= 8 ? 16 : valid * 2);
    const __half* src = bytes ? b + static_cast<size_t>(k0 + r) * n + col0 + c : b;
    seg::ptx::cp_async_16_zfill(&bs[r][c], src, bytes);
  }
}

__global__ void ptx_gemm_kernel(const __half* a, const __half* b, float* c, int m, int n, int k) {
  __shared__ __align__(16) __half as[2][kBM][kStrideA];
  __shared__ __align__(16) __half bs[2][kBK][kStrideB];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wr = warp / 2, wc = warp % 2;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int tiles = (k + kBK - 1) / kBK;
  float acc[2][4] = {};

  load_tiles(a, b, m, n, k, row0, col0, 0, as[0], bs[0]);
  seg::ptx::cp_async_commit();
  for (int kt = 0; kt < tiles; ++kt) {
    if (kt + 1 < tiles) load_tiles(a, b, m, n, k, row0, col0, (kt + 1) * kBK, as[(kt + 1) % 2], bs[(kt + 1) % 2]);
    seg::ptx::cp_async_commit();  // possibly empty: keeps the group count uniform
    seg::ptx::cp_async_wait_group<1>();
    __syncthreads();
    const int buf = kt % 2;
    uint32_t fa[4];
    seg::ptx::ldmatrix_x4(fa, &as[buf][wr * 16 + lane % 16][(lane / 16) * 8]);
    for (int j = 0; j < 2; ++j) {
      uint32_t fb[2];
      seg::ptx::ldmatrix_x2_trans(fb, &bs[buf][lane % 16][wc * 16 + j * 8]);
      seg::ptx::mma_m16n8k16_f16(acc[j], fa, fb, acc[j]);
    }
    __syncthreads();
  }
  // The mma.sync accumulator layout is specified by the PTX ISA: row g (+8), column 2t (+1).
  const int g = lane / 4, t = lane % 4;
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + wr * 16 + g + (i >= 2 ? 8 : 0);
      const int col = col0 + wc * 16 + j * 8 + 2 * t + (i & 1);
      if (row < m && col < n) c[static_cast<size_t>(row) * n + col] = acc[j][i];
    }
}

}  // namespace

namespace simtest {

void ldmatrix_probe(const uint16_t* src, const int* perm, uint32_t* out, int matrices, bool transpose) {
  SEG_LAUNCH(ldmatrix_kernel, 1, 32, 0, 0, src, perm, out, matrices, transpose ? 1 : 0);
}
void mma_probe(const uint16_t* a, const uint16_t* b, const float* c, float* d, bool bf16) {
  SEG_LAUNCH(mma_kernel, 1, 32, 0, 0, a, b, c, d, bf16 ? 1 : 0);
}

void mma_tf32_probe(const float* a, const float* b, const float* c, float* d) {
  SEG_LAUNCH(mma_tf32_kernel, 1, 32, 0, 0, a, b, c, d);
}
void cp_async_probe(const float* src, float* out, int src_bytes) {
  SEG_LAUNCH(cp_async_kernel, 1, 1, 8 * sizeof(float), 0, src, out, src_bytes);
}
void ptx_gemm(const __half* a, const __half* b, float* c, int m, int n, int k) {
  const dim3 grid((n + kBN - 1) / kBN, (m + kBM - 1) / kBM);
  SEG_LAUNCH(ptx_gemm_kernel, grid, 128, 0, 0, a, b, c, m, n, k);
}

}  // namespace simtest
