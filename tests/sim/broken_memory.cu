// Broken kernels: memory errors. A GPU rarely faults on a small overrun (the neighbouring bytes are
// usually mapped); the simulator's guard pages, canaries and poison values, and ASan, catch them.
#include "kernels/cuda/dynamic_smem.h"
#include "kernels/cuda/launch.h"
#include "tests/sim/broken_kernels.h"

namespace {

// BUG: `i <= n` reads one element past the end of x.
__global__ void read_one_past_the_end_kernel(const float* x, int n, float* sum) {
  float s = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += gridDim.x * blockDim.x) s += x[i];
  atomicAdd(sum, s);
}

// BUG: `i <= n` writes one element past the end of y.
__global__ void write_one_past_the_end_kernel(float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += gridDim.x * blockDim.x) y[i] = 1.0f;
}

// BUG: a 64-element shared array indexed by a 128-thread block.
__global__ void static_shared_out_of_bounds_kernel(const float* x, float* y) {
  __shared__ float buf[64];
  buf[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = buf[(threadIdx.x + 1) % 64];
}

// BUG: uses one float of dynamic shared memory per thread, but the launch gives fewer.
__global__ void dynamic_shared_overrun_kernel(float* y) {
  float* smem = seg::dynamic_smem<float>();
  smem[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  y[threadIdx.x] = smem[threadIdx.x];
}

// BUG: reads smem[tid + 1], but nobody writes smem[128].
__global__ void dynamic_shared_uninitialised_kernel(const float* x, float* y) {
  float* smem = seg::dynamic_smem<float>();
  smem[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = smem[threadIdx.x] + smem[threadIdx.x + 1];
}

// BUG: every block adds to the same counter without an atomic.
__global__ void non_atomic_cross_block_add_kernel(float* total) {
  if (threadIdx.x == 0) *total += 1.0f;
}

// BUG: a local array far larger than a thread's stack.
__global__ void stack_overflow_kernel(float* y) {
  volatile char pad[1 << 20];
  // Touch it from the top down, one page at a time, as stack probing would.
  for (int i = (1 << 20) - 1; i >= 0; i -= 4096) pad[i] = static_cast<char>(i);
  y[threadIdx.x] = pad[threadIdx.x];
}

// Not a bug, a deliberate stop: __trap() aborts the kernel.
__global__ void trap_kernel(float* y) {
  if (threadIdx.x == 3) __trap();
  y[threadIdx.x] = 1.0f;
}

}  // namespace

namespace simtest::broken {

void read_one_past_the_end(const float* x, int n, float* sum) {
  SEG_LAUNCH(read_one_past_the_end_kernel, 4, 128, 0, 0, x, n, sum);
}
void write_one_past_the_end(float* y, int n) { SEG_LAUNCH(write_one_past_the_end_kernel, 4, 128, 0, 0, y, n); }
void static_shared_out_of_bounds(const float* x, float* y) {
  SEG_LAUNCH(static_shared_out_of_bounds_kernel, 1, 128, 0, 0, x, y);
}
void dynamic_shared_overrun(float* y, int threads, int launched_floats) {
  SEG_LAUNCH(dynamic_shared_overrun_kernel, 1, threads, launched_floats * sizeof(float), 0, y);
}
void dynamic_shared_uninitialised(const float* x, float* y) {
  SEG_LAUNCH(dynamic_shared_uninitialised_kernel, 1, 128, 129 * sizeof(float), 0, x, y);
}
void non_atomic_cross_block_add(float* total, int blocks) {
  SEG_LAUNCH(non_atomic_cross_block_add_kernel, blocks, 32, 0, 0, total);
}
void trap(float* y) { SEG_LAUNCH(trap_kernel, 1, 32, 0, 0, y); }
void stack_overflow(float* y) { SEG_LAUNCH(stack_overflow_kernel, 1, 32, 0, 0, y); }

}  // namespace simtest::broken
