// Broken host code around kernels: streams, devices, graphs and host access. Each function has one
// bug a GPU run could hide (the results are often right: the timing happens to work out); the
// comment at each says which. The kernels themselves are correct.
#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"
#include "tests/sim/broken_kernels.h"

namespace {

__global__ void scale_kernel(const float* x, float* y, int n, float a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i];
}

__global__ void fill_kernel(float* y, int n, float v) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = v;
}

}  // namespace

namespace simtest::broken {

// BUG: the upload runs on a copy stream and the kernel on a compute stream, and nothing orders
// them: the kernel needs cudaEventRecord(uploaded, copy) + cudaStreamWaitEvent(compute, uploaded).
void upload_then_compute_without_wait(const float* pinned_x, float* d_x, float* d_y, int n) {
  cudaStream_t copy, compute;
  cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking);
  cudaMemcpyAsync(d_x, pinned_x, n * sizeof(float), cudaMemcpyHostToDevice, copy);
  SEG_LAUNCH(scale_kernel, 4, 128, 0, compute, d_x, d_y, n, 2.0f);
  cudaStreamSynchronize(copy);
  cudaStreamSynchronize(compute);
  cudaStreamDestroy(copy);
  cudaStreamDestroy(compute);
}

// BUG: device 0 runs a kernel on device 1's memory without cudaDeviceEnablePeerAccess(1, 0).
void use_peer_memory_without_access(const float* x_on_device_1, float* y_on_device_0, int n) {
  cudaSetDevice(0);
  SEG_LAUNCH(scale_kernel, 4, 128, 0, 0, x_on_device_1, y_on_device_0, n, 2.0f);
}

// BUG: while the stream is captured into a graph, reads a value back with a synchronous cudaMemcpy
// (to decide what to launch next); a capture cannot contain a host synchronisation.
cudaError_t capture_with_synchronous_copy(float* d_x, int n, float* host_value, cudaGraph_t* graph) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  SEG_LAUNCH(fill_kernel, 4, 128, 0, s, d_x, n, 1.0f);
  const cudaError_t e = cudaMemcpy(host_value, d_x, sizeof(float), cudaMemcpyDeviceToHost);
  cudaStreamEndCapture(s, graph);
  cudaStreamDestroy(s);
  return e;
}

// BUG: allocates a temporary with cudaMalloc while the stream is captured (in the default global
// mode); the allocation would not be part of the graph's replays.
cudaError_t capture_with_malloc(float* d_x, int n, cudaGraph_t* graph) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  float* tmp = nullptr;
  const cudaError_t e = cudaMalloc(&tmp, n * sizeof(float));
  if (e == cudaSuccess) SEG_LAUNCH(scale_kernel, 4, 128, 0, s, d_x, tmp, n, 2.0f);
  cudaStreamEndCapture(s, graph);
  if (tmp) cudaFree(tmp);
  cudaStreamDestroy(s);
  return e;
}

// BUG: host code reads the kernel's output through the device pointer instead of copying it
// (and without synchronising).
float read_device_memory_on_host(float* d_y, int n) {
  SEG_LAUNCH(fill_kernel, 4, 128, 0, 0, d_y, n, 3.0f);
  return d_y[0];
}

// BUG: reads the pinned destination of an asynchronous copy before synchronising the stream.
void read_copy_before_sync(const float* d_x, float* pinned_out, float* seen, int n) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaMemcpyAsync(pinned_out, d_x, n * sizeof(float), cudaMemcpyDeviceToHost, s);
  for (int i = 0; i < n; ++i) seen[i] = pinned_out[i];  // needs cudaStreamSynchronize(s) first
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
}

// BUG: refills a pinned staging buffer for the second upload before the first upload, which reads
// it, has run (needs a cudaStreamSynchronize, or an event, or two staging buffers).
void reuse_staging_buffer_too_early(float* pinned_stage, float* d_a, float* d_b, int n) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  for (int i = 0; i < n; ++i) pinned_stage[i] = 1.0f;
  cudaMemcpyAsync(d_a, pinned_stage, n * sizeof(float), cudaMemcpyHostToDevice, s);
  for (int i = 0; i < n; ++i) pinned_stage[i] = 2.0f;
  cudaMemcpyAsync(d_b, pinned_stage, n * sizeof(float), cudaMemcpyHostToDevice, s);
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
}

}  // namespace simtest::broken
