// Warp and block reductions and grid sizing shared by the .cu files of kernels/cuda.
//
// Deterministic by construction: a butterfly (__shfl_xor_sync) sum adds the same pairs on every
// lane, so all lanes end with the same bits, and the block sum adds the warps' sums in warp order.
// Two launches of the same size on any GPU therefore give the same bits; nothing here uses atomics.
//
//   warp_sum(v)                 sum over the 32 lanes, every lane gets it (all 32 lanes must call)
//   group_sum / group_max(v, w) the same within aligned groups of w lanes (w a power of 2 <= 32)
//   block_sum(v, scratch)       sum over the block, every thread gets it; blockDim.x a multiple of 32,
//                               scratch a __shared__ array of 32 elements; two __syncthreads inside
//   block_min(v, scratch)       the same with min (integers: first bad index and the like)
//   grid_blocks(work, per_block, cap)  the grid size of a grid-stride loop: enough blocks for the
//                               work, at most cap (a fixed cap, not the SM count: the partition of a
//                               reduction then depends only on n, never on the GPU)
#pragma once

#include <cstdint>

#include "kernels/cuda/storage_access.cuh"

namespace seg::cuda::dev {

constexpr unsigned kFullMask = 0xFFFFFFFFu;

template <class T> __device__ __forceinline__ T warp_sum(T v) {
SEG_UNROLL
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

template <class T> __device__ __forceinline__ T group_sum(T v, int width) {
  for (int offset = width / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset, width);
  return v;
}

// A max that propagates NaN from either side (fmaxf would drop it: fmaxf(NaN, 1) = 1), so the
// result does not depend on the order of the butterfly. Where it feeds exp(x - max) a NaN anywhere
// in the row makes the row NaN, as in the CPU kernels.
__device__ __forceinline__ float max_keep_nan(float a, float b) { return (a < b || b != b) ? b : a; }

__device__ __forceinline__ float group_max(float v, int width) {
  for (int offset = width / 2; offset > 0; offset >>= 1) v = max_keep_nan(v, __shfl_xor_sync(kFullMask, v, offset, width));
  return v;
}

template <class T> __device__ __forceinline__ T block_sum(T v, T* scratch) {
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int warps = static_cast<int>(blockDim.x) >> 5;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T total = lane < warps ? scratch[lane] : T(0);
  total = warp_sum(total);
  __syncthreads();  // scratch may be reused by the caller's next block_sum
  return total;
}

template <class T> __device__ __forceinline__ T block_min(T v, T* scratch) {
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int warps = static_cast<int>(blockDim.x) >> 5;
  SEG_UNROLL
  for (int offset = 16; offset > 0; offset >>= 1) {
    const T o = __shfl_xor_sync(kFullMask, v, offset);
    v = o < v ? o : v;
  }
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T m = scratch[0];
  for (int w = 1; w < warps; ++w) m = scratch[w] < m ? scratch[w] : m;
  __syncthreads();
  return m;
}

inline int grid_blocks(int64_t work, int64_t per_block, int64_t cap) {
  int64_t blocks = (work + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > cap) blocks = cap;
  return static_cast<int>(blocks);
}

}  // namespace seg::cuda::dev
