// Broken kernels: pointers a kernel must not dereference. A GPU faults on some of these
// ("an illegal memory access was encountered", long after the launch, with no line) and silently
// reads garbage on others (a freed block that was reused, a host address that happens to be mapped
// on the device side); the simulator's pointer checks (kernels/sim/access_check.h) stop the thread
// at the access and say what the address is.
#include "kernels/cuda/launch.h"
#include "tests/sim/broken_kernels.h"

namespace {

// A correct kernel; the bugs are in what the host passes to it.
__global__ void scale_by_two_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}

// BUG: thread 0 publishes the address of its own local variable through shared memory, and the
// other threads read through it. Each thread's locals (registers or local memory) are private.
__global__ void read_other_threads_local_kernel(float* y) {
  __shared__ const float* published;
  float mine = static_cast<float>(threadIdx.x) + 0.5f;
  if (threadIdx.x == 0) published = &mine;
  __syncthreads();
  y[threadIdx.x] = *published;
  __syncthreads();  // thread 0 stays alive until everyone has read (it does not help)
}

}  // namespace

namespace simtest::broken {

void scale_by_two(const float* x, float* y, int n) {
  SEG_LAUNCH(scale_by_two_kernel, (n + 127) / 128, 128, 0, 0, x, y, n);
}
void read_other_threads_local(float* y) { SEG_LAUNCH(read_other_threads_local_kernel, 1, 64, 0, 0, y); }

}  // namespace simtest::broken
