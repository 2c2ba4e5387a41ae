// Tensor-core GEMM on the GPU (kernels/cuda/gemm/*: fragment, warp tile, block tile; this is the
// device-level launcher). Plain C++: no CUDA header, callable from any translation unit.
//
//   C[M,N] = act(alpha * op(A)[M,K] * op(B)[K,N] + beta * C + bias[N])
//
//   op(A) = A (A stored M x K, row-major, lda >= K) or A^T (trans_a: A stored K x M, lda >= M);
//   op(B) = B (B stored K x N, ldb >= N) or B^T (trans_b: B stored N x K, ldb >= K);
//   C row-major M x N with ldc >= N. Inputs T = seg::f16 or seg::bf16 (tensor cores multiply them
//   exactly, sums in f32), or float (TF32: inputs rounded to 10 mantissa bits, as PyTorch's
//   default allow_tf32 convolutions; strict f32 is the SIMT kernels' job). TOut = T or float.
//   bias (may be null) has TOut elements; beta == 0 never reads C; act none, ReLU or ReLU6.
//
// Kernel families (TcOptions::family):
//   mma_sync  f16/bf16: ldmatrix + mma.sync m16n8k16 from an XOR-swizzled 3-stage cp.async
//             pipeline, block tile 128x128x32 (8 warps of 64x32) or 64x64x32 (4 warps of 32x32).
//             float: mma.sync m16n8k8 on TF32, fragments loaded one float per lane from skewed
//             (padded) tiles, the same block tiles with K tile 16 (the backward convolutions' large
//             tile: 8, four stages).
//   wmma      nvcuda::wmma 16x16x16 (f16/bf16) or 16x16x8 (TF32) from a padded 3-stage pipeline,
//             the same block tiles.
//   automatic mma_sync (for float since 2026-12-07; WMMA before).
// Tile: automatic takes 128x128 when it gives at least one block per SM, else 64x64.
// Split-K (TcOptions::split_k; 0 = by shape, split_k_auto below): when the output has too few
// tiles to keep the GPU's schedulers busy and K is deep (backward-weight shapes), K is cut into S
// ranges whose f32 partial sums go to the workspace and are added in the fixed order 0..S-1 by a
// second kernel: deterministic, no atomics. It needs gemm_tc_workspace_bytes() bytes of workspace;
// with less (or none) fewer splits are used. The convolutions (conv2d_tc.h) use the same rule.
//
// Alignment: the 16-byte cp.async path needs A and B 16-byte aligned with lda, ldb multiples of
// 8 elements (4 for float); otherwise that operand is copied element by element (slower, same
// results). Ragged M, N, K are handled on both paths (zero-filled tiles, checked stores).
// Launch: grid (ceil(M/BM), ceil(N/BN), S), 256 or 128 threads, 24-60 KiB dynamic shared memory.
// Traffic: A is read ceil(N/BN) times, B ceil(M/BM) times, C written once (+ read if beta != 0);
// split-K adds 2 * S * M * N * 4 bytes. Never synchronises, never allocates.
// Errors: std::invalid_argument for negative sizes, short leading dimensions or a family that
// does not take T.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/half.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

enum class TcFamily : int { automatic, mma_sync, wmma };
enum class TcTile : int { automatic, large, small };
enum class TcActivation : int { none, relu, relu6 };

struct TcOptions {
  TcFamily family = TcFamily::automatic;
  TcTile tile = TcTile::automatic;
  int split_k = 0;  // 0: chosen by shape; 1: never; S: S splits (at most the number of K tiles)
};

struct TcEpilogue {
  float alpha = 1.0f, beta = 0.0f;
  TcActivation act = TcActivation::none;
};

// Scratch memory from the caller (device memory, 256-byte aligned as cudaMalloc gives).
struct TcWorkspace {
  void* data = nullptr;
  size_t bytes = 0;
};

template <class T, class TOut>
void gemm_tc(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
             int64_t ldb, TOut* C, int64_t ldc, const TOut* bias, const TcEpilogue& epilogue, const TcOptions& options,
             TcWorkspace workspace, Stream stream);

// Workspace gemm_tc uses for this shape (0 when it does not split K).
template <class T>
size_t gemm_tc_workspace_bytes(int64_t M, int64_t N, int64_t K, const TcOptions& options);

// The number of K splits gemm_tc would use with enough workspace (for tests, the lab and docs).
template <class T>
int gemm_tc_splits(int64_t M, int64_t N, int64_t K, const TcOptions& options);

// The split count of split_k = 0 for `tiles` output tiles (all groups) of blocks of `warps` warps
// over a reduction `K` deep, on `sms` SMs:
//   1  when the tiles alone give 3/4 of kSplitWarpsPerSm warps per SM or more, or when K is too
//      shallow (under kSplitMinDepth per split, so under 2 splits);
//   else at least enough splits for kSplitWarpsPerSm warps per SM; of the counts from there to
//      twice that, the one that spreads the blocks most evenly over the SMs (tiles * S nearest
//      below a multiple of sms), the smallest of equals; at most kSplitMax and K / kSplitMinDepth.
// Why (docs/tensor-cores.md, "Split-K by warps per SM"): the backward-weight GEMMs have few output
// tiles (the weights) and a deep K (the pixels). The rule before 2026-12-07 split them to about
// one block per SM (4-8 warps: one or two per scheduler to hide every barrier, ldmatrix and global
// load), and left 144 or 160 blocks for 132 SMs, two rounds with the second nearly empty.
inline constexpr int kSplitWarpsPerSm = 16;  // 4 per scheduler: the 128x128 GEMMs at 2 blocks per SM
inline constexpr int kSplitMinDepth = 1024;  // K per split: the partial sums' traffic stays small
// Partial sums per output element. Only outputs of few tiles get near it (a first convolution's
// weights: one or two tiles over K = 524288 pixels), and for them the splits are what fills the GPU;
// the partials stay small (at most about 2 * (blocks wanted) * BM * BN * 4 bytes).
inline constexpr int kSplitMax = 256;
int split_k_auto(int64_t tiles, int64_t K, int sms, int warps);

const char* tc_family_name(TcFamily f);

}  // namespace seg::cuda
