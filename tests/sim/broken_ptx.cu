// Broken kernels: misuse of the PTX helpers of kernels/cuda/ptx.h.
#include <cstdint>

#include "kernels/cuda/dynamic_smem.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ptx.h"
#include "tests/sim/broken_kernels.h"

namespace {

// BUG: reads the copied tile after the barrier but without cp.async.wait: the copies may not have
// landed (in the simulator they never have).
__global__ void cp_async_without_wait_kernel(const float* x, float* y) {
  float* tile = seg::dynamic_smem<float>();
  const int t = threadIdx.x;
  if (t % 4 == 0) seg::ptx::cp_async<16>(&tile[t], &x[t]);
  seg::ptx::cp_async_commit();
  // missing: seg::ptx::cp_async_wait_all();
  __syncthreads();
  y[t] = tile[(t + 1) % blockDim.x];
}

// BUG: ldmatrix rows must be 16-byte aligned; these are 8 bytes apart from it.
__global__ void ldmatrix_misaligned_kernel(const unsigned short* x, unsigned* y) {
  __shared__ __align__(16) unsigned short rows[8 * 12];
  const int lane = threadIdx.x;
  for (int i = lane; i < 8 * 12; i += 32) rows[i] = x[i];
  __syncwarp();
  uint32_t r[1];
  seg::ptx::ldmatrix_x1(r, &rows[(lane % 8) * 12 + 4]);
  y[lane] = r[0];
}

// BUG: cp.async copies from global memory; this source is ordinary host memory.
__global__ void cp_async_from_host_memory_kernel(const float* host_x, float* y) {
  float* tile = seg::dynamic_smem<float>();
  seg::ptx::cp_async<16>(&tile[4 * threadIdx.x], &host_x[4 * threadIdx.x]);
  seg::ptx::cp_async_wait_all();
  y[threadIdx.x] = tile[4 * threadIdx.x];
}

}  // namespace

namespace simtest::broken {

void cp_async_without_wait(const float* x, float* y) {
  SEG_LAUNCH(cp_async_without_wait_kernel, 1, 128, 128 * sizeof(float), 0, x, y);
}
void ldmatrix_misaligned(const unsigned short* x, unsigned* y) {
  SEG_LAUNCH(ldmatrix_misaligned_kernel, 1, 32, 0, 0, x, y);
}
void cp_async_from_host_memory(const float* host_x, float* y) {
  SEG_LAUNCH(cp_async_from_host_memory_kernel, 1, 8, 32 * sizeof(float), 0, host_x, y);
}

}  // namespace simtest::broken
