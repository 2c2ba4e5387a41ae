// Broken kernels: missing or misplaced __syncthreads. On a GPU these often give right answers
// (warps happen to run in a lucky order); the simulator's schedules and TSan make them visible.
#include <cuda_fp16.h>

#include "kernels/cuda/dynamic_smem.h"
#include "kernels/cuda/launch.h"
#include "tests/sim/broken_kernels.h"

namespace {

constexpr int kThreads = 256;

// BUG: warp 0 reads the other warps' partial sums without a barrier after they are written.
__global__ void warp_sums_without_barrier_kernel(const float* x, float* block_sums) {
  float* warp_sums = seg::dynamic_smem<float>();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
  if (lane == 0) warp_sums[warp] = v;
  // missing: __syncthreads();
  if (warp == 0) {
    float s = lane < kThreads / 32 ? warp_sums[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xFFFFFFFFu, s, offset);
    if (lane == 0) block_sums[blockIdx.x] = s;
  }
}

// BUG: the barrier inside the tree reduction loop is missing.
__global__ void tree_reduction_without_barrier_kernel(const float* x, float* block_sums) {
  __shared__ float partial[kThreads];
  const int tid = threadIdx.x;
  partial[tid] = x[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (tid < s) partial[tid] += partial[tid + s];
    // missing: __syncthreads();
  }
  if (tid == 0) block_sums[blockIdx.x] = partial[0];
}

// BUG: the tile in shared memory is overwritten by the next iteration while slower threads still
// read it (write-after-read): the barrier at the end of the loop body is missing.
__global__ void staging_without_trailing_barrier_kernel(const float* x, float* y, int tiles) {
  __shared__ float tile[kThreads];
  const int tid = threadIdx.x;
  for (int t = 0; t < tiles; ++t) {
    tile[tid] = x[t * kThreads + tid];
    __syncthreads();
    y[t * kThreads + tid] = tile[tid] + tile[(tid + 1) % kThreads];
    // missing: __syncthreads();
  }
}

// BUG: threads past the end return before a barrier the others wait at (undefined behaviour).
__global__ void early_return_before_barrier_kernel(const float* x, float* y, int n) {
  __shared__ float tile[kThreads];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  tile[threadIdx.x] = x[i];
  __syncthreads();
  const int next = (threadIdx.x + 1) % blockDim.x;
  y[i] = tile[threadIdx.x] + (blockIdx.x * blockDim.x + next < static_cast<unsigned>(n) ? tile[next] : 0.0f);
}

// BUG: two groups of threads wait at two different __syncthreads.
__global__ void barriers_at_different_sites_kernel(const float* x, float* y) {
  __shared__ float tile[64];
  const int tid = threadIdx.x;
  tile[tid] = x[tid];
  if (tid < 32) {
    __syncthreads();
    y[tid] = tile[63 - tid];
  } else {
    __syncthreads();
    y[tid] = tile[63 - tid] * 2.0f;
  }
}

// BUG: reads a neighbour's element of a __half tile without a barrier after the writes. (Also
// checks that TSan still sees races on class-type __shared__ arrays, whose g++ guard byte the
// simulator declares benign.)
__global__ void half_tile_without_barrier_kernel(const __half* x, __half* y) {
  __shared__ __half tile[kThreads];
  tile[threadIdx.x] = x[threadIdx.x];
  // missing: __syncthreads();
  y[threadIdx.x] = tile[(threadIdx.x + 1) % kThreads];
}

}  // namespace

namespace simtest::broken {

void warp_sums_without_barrier(const float* x, float* block_sums, int blocks) {
  SEG_LAUNCH(warp_sums_without_barrier_kernel, blocks, kThreads, (kThreads / 32) * sizeof(float), 0, x, block_sums);
}
void tree_reduction_without_barrier(const float* x, float* block_sums, int blocks) {
  SEG_LAUNCH(tree_reduction_without_barrier_kernel, blocks, kThreads, 0, 0, x, block_sums);
}
void staging_without_trailing_barrier(const float* x, float* y, int tiles) {
  SEG_LAUNCH(staging_without_trailing_barrier_kernel, 1, kThreads, 0, 0, x, y, tiles);
}
void early_return_before_barrier(const float* x, float* y, int n) {
  SEG_LAUNCH(early_return_before_barrier_kernel, (n + kThreads - 1) / kThreads, kThreads, 0, 0, x, y, n);
}
void half_tile_without_barrier(const __half* x, __half* y) {
  SEG_LAUNCH(half_tile_without_barrier_kernel, 1, kThreads, 0, 0, x, y);
}
void barriers_at_different_sites(const float* x, float* y) {
  SEG_LAUNCH(barriers_at_different_sites_kernel, 1, 64, 0, 0, x, y);
}

}  // namespace simtest::broken
