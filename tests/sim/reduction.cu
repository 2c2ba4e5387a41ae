// Good kernel of the simulator suite: a block reduction that uses most block- and warp-level
// features at once: a grid-stride loop, __ballot_sync + __popc, a __shfl_down_sync warp reduction,
// per-warp partial sums in dynamic shared memory and counts in static shared memory, a barrier, a
// __shfl_xor_sync reduction in warp 0, and float and int atomicAdd across blocks.
#include "kernels/cuda/dynamic_smem.h"
#include "kernels/cuda/launch.h"
#include "tests/sim/sim_test_kernels.h"

namespace {

// blockDim.x must be a multiple of 32; dynamic shared memory: one float per warp.
__global__ void block_reduce_kernel(const float* x, int n, float* sum, int* positives) {
  float* warp_sums = seg::dynamic_smem<float>();
  __shared__ int warp_counts[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  const int stride = gridDim.x * blockDim.x;

  float s = 0.0f;
  int count = 0;
  // The loop bound is the same for the whole block, so every lane takes part in every ballot.
  for (int base = blockIdx.x * blockDim.x; base < n; base += stride) {
    const int i = base + static_cast<int>(threadIdx.x);
    const float v = i < n ? x[i] : 0.0f;
    s += v;
    count += __popc(__ballot_sync(0xFFFFFFFFu, v > 0.0f));
  }
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xFFFFFFFFu, s, offset);
  if (lane == 0) {
    warp_sums[warp] = s;
    warp_counts[warp] = count;
  }
  __syncthreads();
  if (warp == 0) {
    float t = lane < warps ? warp_sums[lane] : 0.0f;
    int c = lane < warps ? warp_counts[lane] : 0;
    for (int offset = 16; offset > 0; offset /= 2) {
      t += __shfl_xor_sync(0xFFFFFFFFu, t, offset);
      c += __shfl_xor_sync(0xFFFFFFFFu, c, offset);
    }
    if (lane == 0) {
      atomicAdd(sum, t);
      atomicAdd(positives, c);
    }
  }
}

}  // namespace

namespace simtest {

void block_reduce(const float* x, int n, float* sum, int* positives, int blocks, int threads) {
  SEG_LAUNCH(block_reduce_kernel, blocks, threads, (threads / 32) * sizeof(float), 0, x, n, sum, positives);
}

}  // namespace simtest
