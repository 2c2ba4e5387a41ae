// Broken kernels: warp collectives used wrongly. On Volta and later GPUs several of these "work"
// by accident (the hardware waits for the missing lanes to exit, or returns some value).
#include "kernels/cuda/launch.h"
#include "tests/sim/broken_kernels.h"

namespace {

// BUG: a full-mask shuffle inside `if (lane < 16)`: lanes 16-31 never execute it; they wait at the
// barrier instead.
__global__ void divergent_shuffle_then_barrier_kernel(const float* x, float* y) {
  const int lane = threadIdx.x % 32;
  float v = x[threadIdx.x];
  if (lane < 16) v += __shfl_xor_sync(0xFFFFFFFFu, v, 16);
  __syncthreads();
  y[threadIdx.x] = v;
}

// BUG: the same shuffle, but lanes 16-31 leave: the shuffle reads lanes that are gone.
__global__ void divergent_shuffle_then_exit_kernel(const float* x, float* y) {
  const int lane = threadIdx.x % 32;
  float v = x[threadIdx.x];
  if (lane >= 16) return;
  v += __shfl_xor_sync(0xFFFFFFFFu, v, 16);
  y[threadIdx.x] = v;
}

// BUG: a full-mask warp reduction in a 48-thread block: warp 1 has only 16 lanes, and the
// reduction reads lanes 16-31 that do not exist.
__global__ void partial_warp_reduction_kernel(const float* x, float* y) {
  float v = x[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
  y[threadIdx.x] = v;
}

// BUG: the mask names only the upper half-warp, but every lane calls the shuffle.
__global__ void shuffle_mask_without_caller_kernel(const float* x, float* y) {
  y[threadIdx.x] = __shfl_sync(0xFFFF0000u, x[threadIdx.x], 16);
}

// BUG: odd lanes shuffle while even lanes vote, both with the full mask.
__global__ void mismatched_collectives_kernel(const float* x, float* y) {
  const int lane = threadIdx.x % 32;
  const float v = x[threadIdx.x];
  if (lane % 2)
    y[threadIdx.x] = __shfl_sync(0xFFFFFFFFu, v, 0);
  else
    y[threadIdx.x] = static_cast<float>(__ballot_sync(0xFFFFFFFFu, v > 0.0f));
}

// BUG: width must be a power of two.
__global__ void bad_shuffle_width_kernel(const float* x, float* y) {
  y[threadIdx.x] = __shfl_xor_sync(0xFFFFFFFFu, x[threadIdx.x], 1, 12);
}

}  // namespace

namespace simtest::broken {

void divergent_shuffle_then_barrier(const float* x, float* y) {
  SEG_LAUNCH(divergent_shuffle_then_barrier_kernel, 1, 64, 0, 0, x, y);
}
void divergent_shuffle_then_exit(const float* x, float* y) {
  SEG_LAUNCH(divergent_shuffle_then_exit_kernel, 1, 64, 0, 0, x, y);
}
void partial_warp_reduction(const float* x, float* y) { SEG_LAUNCH(partial_warp_reduction_kernel, 1, 48, 0, 0, x, y); }
void shuffle_mask_without_caller(const float* x, float* y) {
  SEG_LAUNCH(shuffle_mask_without_caller_kernel, 1, 32, 0, 0, x, y);
}
void mismatched_collectives(const float* x, float* y) { SEG_LAUNCH(mismatched_collectives_kernel, 1, 32, 0, 0, x, y); }
void bad_shuffle_width(const float* x, float* y) { SEG_LAUNCH(bad_shuffle_width_kernel, 1, 32, 0, 0, x, y); }

}  // namespace simtest::broken
