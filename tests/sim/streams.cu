// Small kernels for the stream, event, device and graph tests (test_streams.cpp, test_devices.cpp,
// test_graphs.cpp, test_stream_races.cpp): each does one visible thing to a buffer, on a stream.
#include "kernels/cuda/launch.h"
#include "tests/sim/stream_test_kernels.h"

namespace {

__global__ void fill_kernel(float* y, int n, float value) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = value;
}

__global__ void affine_kernel(const float* x, float* y, int n, float a, float b) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + b;
}

__global__ void add_one_kernel(float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] += 1.0f;
}

// Appends `tag` to a log: the order in which launches ran.
__global__ void append_tag_kernel(int* log, int* count, int tag) {
  if (threadIdx.x == 0 && blockIdx.x == 0) log[atomicAdd(count, 1)] = tag;
}

// Reads a[0] and b[0] through separate pointers (the race detector sees two arguments).
__global__ void sum_first_kernel(const float* a, const float* b, float* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *out = a[0] + b[0];
}

__global__ void trap_kernel(float* y) {
  if (threadIdx.x == 0) __trap();
  y[threadIdx.x] = 1.0f;
}

}  // namespace

namespace simtest::streams {

void fill(float* y, int n, float value, cudaStream_t stream) { SEG_LAUNCH(fill_kernel, 4, 64, 0, stream, y, n, value); }
void affine(const float* x, float* y, int n, float a, float b, cudaStream_t stream) {
  SEG_LAUNCH(affine_kernel, 4, 64, 0, stream, x, y, n, a, b);
}
void add_one(float* y, int n, cudaStream_t stream) { SEG_LAUNCH(add_one_kernel, 4, 64, 0, stream, y, n); }
void append_tag(int* log, int* count, int tag, cudaStream_t stream) {
  SEG_LAUNCH(append_tag_kernel, 1, 32, 0, stream, log, count, tag);
}
void sum_first(const float* a, const float* b, float* out, cudaStream_t stream) {
  SEG_LAUNCH(sum_first_kernel, 1, 32, 0, stream, a, b, out);
}
void trap(float* y, cudaStream_t stream) { SEG_LAUNCH(trap_kernel, 1, 32, 0, stream, y); }

}  // namespace simtest::streams
