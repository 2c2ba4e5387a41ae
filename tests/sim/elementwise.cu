// Good kernels of the simulator suite: grid-stride element-wise math, a float -> half conversion,
// 2-D indexing, and a kernel that records the order in which the scheduler runs threads.
#include <cuda_fp16.h>

#include "kernels/cuda/launch.h"
#include "tests/sim/sim_test_kernels.h"

namespace {

__global__ void scale_exp_kernel(const float* x, float* y, int n, float scale) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    y[i] = __fdividef(v, scale) + __expf(-v * v) * rsqrtf(1.0f + v * v);
  }
}

__global__ void float_to_half_kernel(const float* x, __half* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = __float2half_rn(x[i]);
}

__global__ void transpose_kernel(const float* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

__global__ void order_kernel(int* order_before, int* order_after, int* counters) {
  order_before[atomicAdd(&counters[0], 1)] = threadIdx.x;
  __syncthreads();
  order_after[atomicAdd(&counters[1], 1)] = threadIdx.x;
}

}  // namespace

namespace simtest {

void scale_exp(const float* x, float* y, int n, float scale, int blocks, int threads) {
  SEG_LAUNCH(scale_exp_kernel, blocks, threads, 0, 0, x, y, n, scale);
}

void float_to_half(const float* x, __half* y, int n, int blocks, int threads) {
  SEG_LAUNCH(float_to_half_kernel, blocks, threads, 0, 0, x, y, n);
}

void transpose(const float* in, float* out, int rows, int cols) {
  const dim3 block(16, 8);
  const dim3 grid((cols + 15) / 16, (rows + 7) / 8);
  SEG_LAUNCH(transpose_kernel, grid, block, 0, 0, in, out, rows, cols);
}

void run_order(int* order_before, int* order_after, int* counters, int threads) {
  SEG_LAUNCH(order_kernel, 1, threads, 0, 0, order_before, order_after, counters);
}

}  // namespace simtest
