// Good kernels of the simulator suite: grid-stride element-wise math, a float -> half conversion,
// 2-D indexing, and a kernel that records the order in which the scheduler runs threads.
#include <cuda_fp16.h>

#include "kernels/cuda/dynamic_smem.h"
#include "kernels/cuda/launch.h"
#include "tests/sim/sim_test_kernels.h"

__device__ int simtest_launch_counter = 0;

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

// A kernel without parameters (SEG_LAUNCH with no arguments after the stream).
__global__ void count_kernel() {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(&simtest_launch_counter, 1);
}

// A template kernel with two template arguments: SEG_LAUNCH needs it in parentheses.
template <class T, int Scale>
__global__ void scale_kernel(T* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= static_cast<T>(Scale);
}

// Writes one float per thread into dynamic shared memory and reads back a neighbour's.
__global__ void smem_roundtrip_kernel(float* y, int floats) {
  float* smem = seg::dynamic_smem<float>();
  for (int i = threadIdx.x; i < floats; i += blockDim.x) smem[i] = static_cast<float>(i);
  __syncthreads();
  y[threadIdx.x] = smem[floats - 1 - threadIdx.x];
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

void scale_exp_config(const float* x, float* y, int n, dim3 grid, dim3 block) {
  SEG_LAUNCH(scale_exp_kernel, grid, block, 0, 0, x, y, n, 1.0f);
}

int count_launches(int times) {
  int before = 0, after = 0;
  cudaMemcpyFromSymbol(&before, simtest_launch_counter, sizeof before);
  for (int i = 0; i < times; ++i) SEG_LAUNCH(count_kernel, 2, 32, 0, 0);
  cudaMemcpyFromSymbol(&after, simtest_launch_counter, sizeof after);
  return after - before;
}

void scale_by_three(float* y, int n) { SEG_LAUNCH((scale_kernel<float, 3>), (n + 63) / 64, 64, 0, 0, y, n); }

cudaError_t smem_roundtrip(float* y, int threads, int floats, bool opt_in) {
  if (opt_in) {
    const cudaError_t e = cudaFuncSetAttribute(smem_roundtrip_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(floats * sizeof(float)));
    if (e != cudaSuccess) return e;
  }
  SEG_LAUNCH(smem_roundtrip_kernel, 1, threads, floats * sizeof(float), 0, y, floats);
  return cudaSuccess;
}

void run_order(int* order_before, int* order_after, int* counters, int threads) {
  SEG_LAUNCH(order_kernel, 1, threads, 0, 0, order_before, order_after, counters);
}

}  // namespace simtest
