// GEMM versions of the CUDA kernel lab: C[M,N] = A[M,K] * B[K,N], f16 inputs, f32 sums and output,
// A and B row-major. Each version adds one idea to the one before; the harness (tc_lab.cpp)
// validates each against the CPU, times it and prints counters:  lab_tc gemm [version]
//
//   v1  naive: one thread per output element, K loop over global memory (SIMT FMAs)
//   v2  shared-memory tiling: 64x64 block tile staged through shared memory, 4x4 outputs per thread
//   v3  WMMA: tensor cores through nvcuda::wmma, 128x128x32 block tile, 8 warps of 64x32, one stage
//       (copy, wait, compute), tiles unpadded
//   v4  WMMA double-buffered: two cp.async stages (the next tile loads while this one computes),
//       rows padded by 16 bytes against bank conflicts
//   v5  mma.sync + ldmatrix: the PTX instructions whose lane layouts are specified, one stage, tiles
//       unpadded (ldmatrix reads 8 rows of one 16-byte column: 4-way bank conflicts)
//   v6  + cp.async multistage: three stages in flight
//   v7  + swizzle: 16-byte chunk j of row r stored at j ^ f(r): conflict-free with no padding
//       (the product's 128x128 kernel until its copies skipped the K bound inside K: that is v14)
//   v8  + split-K: the product launcher, which picks the tile and splits K when the output tiles
//       cannot fill the GPU (thin, deep shapes), reducing the partials in a fixed order
//   v9  128x256x32 tile with 64x64 warp tiles: more MMAs per copied chunk and per fragment load
//   v10 v9 with 64-deep K tiles: half the barriers per MMA
//   v11 v7 with four stages (one more K tile in flight; 64 KiB of shared memory)
//   v12 v11 + fragment prefetch: each warp loads k step s+1's fragments before k step s's MMAs, and
//       the barrier moves to the tile's last k step (block_tile.h, MainLoop::prefetch_fragments)
//   v13 v12 with 64-deep K tiles and three stages (as much in flight, half the barriers per MMA)
//   v14 v7 with inside-K copies: the main loop in two parts, the first (every K tile but a ragged
//       last one) copying without the K bound (block_tile.h, GemmKernel's InsideK_): the product's
//       128x128 kernel since 2026-12-06
//   v15 v12 with the same inside-K copies
//   v16 cuBLASLt (GPU build): the baseline
#include <cuda_fp16.h>

#include "kernels/cuda/engine.h"
#include "kernels/cuda/engine_cublaslt.h"
#include "kernels/cuda/gemm/device_launch.h"
#include "kernels/cuda/gemm/operand_source.h"
#include "kernels/cuda/gemm_tc.h"
#include "kernels/cuda/launch.h"
#include "kernels/lab/tc_lab.h"

namespace seg::lab {

namespace {

using namespace seg::cuda::tc;

// v1 ------------------------------------------------------------------------------------------------
__global__ void __launch_bounds__(256) gemm_naive_kernel(const __half* a, const __half* b, float* c, int M, int N, int K) {
  const int n = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int m = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (m >= M || n >= N) return;
  float s = 0.0f;
  for (int k = 0; k < K; ++k)
    s = __fmaf_rn(__half2float(a[static_cast<int64_t>(m) * K + k]), __half2float(b[static_cast<int64_t>(k) * N + n]), s);
  c[static_cast<int64_t>(m) * N + n] = s;
}

// v2 ------------------------------------------------------------------------------------------------
constexpr int kT = 64, kTK = 16;
__global__ void __launch_bounds__(256) gemm_smem_kernel(const __half* a, const __half* b, float* c, int M, int N, int K) {
  __shared__ float as[kTK][kT + 4];  // A tile transposed: as[k][m], so the inner loop reads a row
  __shared__ float bs[kTK][kT];
  const int tid = static_cast<int>(threadIdx.x), tx = tid % 16, ty = tid / 16;
  const int m0 = static_cast<int>(blockIdx.y) * kT, n0 = static_cast<int>(blockIdx.x) * kT;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += kTK) {
    for (int e = tid; e < kT * kTK; e += 256) {
      const int r = e / kTK, kk = e % kTK, m = m0 + r, k = k0 + kk;
      as[kk][r] = m < M && k < K ? __half2float(a[static_cast<int64_t>(m) * K + k]) : 0.0f;
      const int kb = e / kT, cc = e % kT, n = n0 + cc, k2 = k0 + kb;
      bs[kb][cc] = k2 < K && n < N ? __half2float(b[static_cast<int64_t>(k2) * N + n]) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < kTK; ++kk) {
      float x[4], y[4];
      for (int i = 0; i < 4; ++i) x[i] = as[kk][ty * 4 + i];
      for (int j = 0; j < 4; ++j) y[j] = bs[kk][tx * 4 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = __fmaf_rn(x[i], y[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
      if (m < M && n < N) c[static_cast<int64_t>(m) * N + n] = acc[i][j];
    }
}

// v3..v7: the block kernel of kernels/cuda/gemm with the lab's choice of family, stages, layout.
using ASrc = MatrixSource<__half, Major::k>;
using BSrc = MatrixSource<__half, Major::mn>;
template <int Stages>
using Big = TileShape<128, 128, 32, 2, 4, Stages>;
// v9, v10: twice the block tile along N with 64x64 warp tiles, so each K tile's copies (global
// loads) and each fragment load feed more MMAs: 3 chunks per HMMA per block instead of 4, and per
// warp and 16-deep step 8 ldmatrix.x4 for 32 mma.sync instead of 6 for 16 (tools/sass_loop_report.py
// counts the main loop). One block of 8 warps per SM (about 250 registers a thread).
template <int BK>
using Wide = TileShape<128, 256, BK, 2, 4, 3>;
template <class Shape, SmemKind Kind, template <class, class, Major, Major, class, class> class Warp,
          MainLoop Loop = MainLoop::barrier_first, bool InsideK = false>
using Lab = GemmKernel<__half, Shape, Major::k, Major::mn, Kind, Warp, ASrc, BSrc, Plant::none, Loop, InsideK>;

template <class Kernel>
void run_block_kernel(const GemmProblem& p, seg::cuda::Stream stream) {
  typename Kernel::Params q{};
  q.a = ASrc{reinterpret_cast<const __half*>(p.A), p.K, p.M, p.K, 0};
  q.b = BSrc{reinterpret_cast<const __half*>(p.B), p.N, p.K, p.N, 0};
  q.M = p.M;
  q.N = p.N;
  q.K = p.K;
  q.vec_a = aligned16(p.A) && p.K % 8 == 0;
  q.vec_b = aligned16(p.B) && p.N % 8 == 0;
  q.ep.d = p.C;
  q.ep.ldd = p.N;
  q.ep.d_type = OutType::f32;
  q.ep.d_vec = p.N % 4 == 0;
  launch_gemm<Kernel>(q, 1, 1, seg::cuda::TcWorkspace{}, stream);
}

}  // namespace

const std::vector<Version>& gemm_versions() {
  static const std::vector<Version> v = {
      {1, "naive", "one thread per output, K loop over global memory (SIMT)", false},
      {2, "smem-tiled", "64x64 tiles staged through shared memory, 4x4 outputs per thread (SIMT)", false},
      {3, "wmma", "tensor cores via nvcuda::wmma, 128x128x32 tile, one stage, unpadded", false},
      {4, "wmma-2stage", "+ two cp.async stages, rows padded by 16 bytes", false},
      {5, "mma.sync", "ldmatrix + mma.sync m16n8k16, one stage, unpadded", false},
      {6, "mma.sync-3stage", "+ three cp.async stages in flight", false},
      {7, "mma.sync-swizzle", "+ XOR-swizzled tiles (the product's 128x128 kernel before v14)", false},
      {8, "product", "+ tile choice and split-K by shape (seg::cuda::gemm_tc)", false},
      {9, "mma-128x256", "v7 with a 128x256x32 tile and 64x64 warp tiles (not yet the product's)", false},
      {10, "mma-128x256x64", "v9 with 64-deep K tiles: half the barriers per MMA", false},
      {11, "mma-4stage", "v7 with four cp.async stages (64 KiB of shared memory)", false},
      {12, "mma-prefetch", "v11 + next k step's fragments loaded before this one's MMAs, barrier at the last k step", false},
      {13, "mma-prefetch-bk64", "v12 with 64-deep K tiles, three stages: half the barriers per MMA", false},
      {14, "mma-inside-k", "v7 + K tiles inside K copied without the K bound (the product's 128x128 kernel)", false},
      {15, "mma-prefetch-inside-k", "v12 + the same inside-K copies", false},
      {16, "cublaslt", "cuBLASLt (the baseline)", true},
  };
  return v;
}

size_t gemm_workspace_bytes(int M, int N, int K) {
  const size_t split = seg::cuda::gemm_tc_workspace_bytes<seg::f16>(M, N, K, {});
  const size_t cublas = size_t{32} << 20;
  return split > cublas ? split : cublas;
}

bool run_gemm_version(int id, const GemmProblem& p, seg::cuda::Stream stream) {
  const __half* a = reinterpret_cast<const __half*>(p.A);
  const __half* b = reinterpret_cast<const __half*>(p.B);
  switch (id) {
    case 1: {
      const dim3 block(32, 8), grid((p.N + 31) / 32, (p.M + 7) / 8);
      SEG_LAUNCH(gemm_naive_kernel, grid, block, 0, stream, a, b, p.C, p.M, p.N, p.K);
      return true;
    }
    case 2: {
      const dim3 grid((p.N + kT - 1) / kT, (p.M + kT - 1) / kT);
      SEG_LAUNCH(gemm_smem_kernel, grid, 256, 0, stream, a, b, p.C, p.M, p.N, p.K);
      return true;
    }
    case 3: run_block_kernel<Lab<Big<1>, SmemKind::plain, WmmaWarpTile>>(p, stream); return true;
    case 4: run_block_kernel<Lab<Big<2>, SmemKind::padded, WmmaWarpTile>>(p, stream); return true;
    case 5: run_block_kernel<Lab<Big<1>, SmemKind::plain, MmaSyncWarpTile>>(p, stream); return true;
    case 6: run_block_kernel<Lab<Big<3>, SmemKind::plain, MmaSyncWarpTile>>(p, stream); return true;
    case 7: run_block_kernel<Lab<Big<3>, SmemKind::swizzled, MmaSyncWarpTile>>(p, stream); return true;
    case 8:
      seg::cuda::gemm_tc<seg::f16, float>(false, false, p.M, p.N, p.K, p.A, p.K, p.B, p.N, p.C, p.N, nullptr, {}, {},
                                          seg::cuda::TcWorkspace{p.workspace, p.workspace_bytes}, stream);
      return true;
    case 9: run_block_kernel<Lab<Wide<32>, SmemKind::swizzled, MmaSyncWarpTile>>(p, stream); return true;
    case 10: run_block_kernel<Lab<Wide<64>, SmemKind::swizzled, MmaSyncWarpTile>>(p, stream); return true;
    case 11: run_block_kernel<Lab<Big<4>, SmemKind::swizzled, MmaSyncWarpTile>>(p, stream); return true;
    case 12: run_block_kernel<Lab<Big<4>, SmemKind::swizzled, MmaSyncWarpTile, MainLoop::prefetch_fragments>>(p, stream); return true;
    case 13:
      run_block_kernel<Lab<TileShape<128, 128, 64, 2, 4, 3>, SmemKind::swizzled, MmaSyncWarpTile,
                           MainLoop::prefetch_fragments>>(p, stream);
      return true;
    case 14:
      run_block_kernel<Lab<Big<3>, SmemKind::swizzled, MmaSyncWarpTile, MainLoop::barrier_first, true>>(p, stream);
      return true;
    case 15:
      run_block_kernel<Lab<Big<4>, SmemKind::swizzled, MmaSyncWarpTile, MainLoop::prefetch_fragments, true>>(p, stream);
      return true;
    case 16:
      if (!seg::cuda::engine_available(seg::cuda::Engine::cublaslt)) return false;
      seg::cuda::gemm_cublaslt<seg::f16, float>(false, false, p.M, p.N, p.K, p.A, p.K, p.B, p.N, p.C, p.N, nullptr, {},
                                                seg::cuda::TcWorkspace{p.workspace, p.workspace_bytes}, stream);
      return true;
    default: return false;
  }
}

}  // namespace seg::lab
