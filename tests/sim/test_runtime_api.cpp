// The simulator's CUDA runtime API (kernels/sim/runtime_*.cpp): allocation, copies, handles, queries.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/sim/sim_test_util.h"

TEST_CASE("sim runtime: cudaMalloc is 256-byte aligned and poisoned, cudaFree checks its pointer") {
  for (const size_t bytes : {size_t{1}, size_t{100}, size_t{4096}, size_t{1} << 20}) {
    void* p = nullptr;
    REQUIRE(cudaMalloc(&p, bytes) == cudaSuccess);
    CHECK(reinterpret_cast<uintptr_t>(p) % 256 == 0);
    std::vector<unsigned char> host(bytes);
    REQUIRE(cudaMemcpy(host.data(), p, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    size_t not_poison = 0;
    for (unsigned char c : host) not_poison += c != 0xFF;
    CHECK(not_poison == 0);  // never-written device memory reads as NaN / -1
    CHECK(cudaFree(p) == cudaSuccess);
  }
  int local = 0;
  CHECK(cudaFree(&local) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaSuccess);  // reading the last error clears it
  CHECK(cudaFree(nullptr) == cudaSuccess);
}

TEST_CASE("sim runtime: copies and memsets are checked against the allocation") {
  float* d = nullptr;
  REQUIRE(cudaMalloc(&d, 16 * sizeof(float)) == cudaSuccess);
  std::vector<float> host(32, 2.5f), back(32, 0.0f);
  CHECK(cudaMemcpy(d, host.data(), 16 * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaMemcpy(back.data(), d, 16 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back[15] == 2.5f);
  // One element too many: the device range leaves the allocation.
  CHECK(cudaMemcpy(d, host.data(), 17 * sizeof(float), cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  // Host memory named as device memory.
  CHECK(cudaMemcpy(back.data(), host.data(), 4, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(d, host.data(), 17 * sizeof(float), cudaMemcpyDefault) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(d + 8, d, 8 * sizeof(float), cudaMemcpyDefault) == cudaSuccess);
  CHECK(cudaMemset(d, 0, 16 * sizeof(float)) == cudaSuccess);
  CHECK(cudaMemset(d, 0, 17 * sizeof(float)) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(back.data(), d, 16 * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back[0] == 0.0f);
  (void)cudaGetLastError();
  cudaFree(d);
}

TEST_CASE("sim runtime: cudaMemcpy2D copies rows between pitched buffers") {
  const size_t width = 3 * sizeof(int), height = 4, dpitch = 8 * sizeof(int);
  std::vector<int> src(3 * 4);
  for (int i = 0; i < 12; ++i) src[i] = i;
  int* d = nullptr;
  REQUIRE(cudaMalloc(&d, dpitch * height) == cudaSuccess);
  REQUIRE(cudaMemcpy2D(d, dpitch, src.data(), width, width, height, cudaMemcpyHostToDevice) == cudaSuccess);
  std::vector<int> back(3 * 4, -1);
  REQUIRE(cudaMemcpy2D(back.data(), width, d, dpitch, width, height, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back == src);
  CHECK(cudaMemcpy2D(d, dpitch, src.data(), width, width, height + 1, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
  cudaFree(d);
}

TEST_CASE("sim runtime: streams, events and device queries") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaStreamQuery(s) == cudaSuccess);
  cudaEvent_t a = nullptr, b = nullptr, untimed = nullptr;
  REQUIRE(cudaEventCreate(&a) == cudaSuccess);
  REQUIRE(cudaEventCreate(&b) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming) == cudaSuccess);
  float ms = -1.0f;
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaErrorInvalidResourceHandle);  // not recorded yet
  CHECK(cudaEventRecord(a, s) == cudaSuccess);
  float* work = nullptr;
  REQUIRE(cudaMalloc(&work, 4096 * sizeof(float)) == cudaSuccess);
  CHECK(cudaMemsetAsync(work, 0, 4096 * sizeof(float), s) == cudaSuccess);  // some work between the events
  CHECK(cudaEventRecord(b, s) == cudaSuccess);
  CHECK(cudaEventSynchronize(b) == cudaSuccess);
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
  CHECK(ms > 0.0f);  // simulated device time (test_streams.cpp checks its order)
  cudaFree(work);
  CHECK(cudaEventRecord(untimed, s) == cudaSuccess);
  CHECK(cudaEventElapsedTime(&ms, a, untimed) == cudaErrorInvalidResourceHandle);
  CHECK(cudaStreamWaitEvent(s, b, 0) == cudaSuccess);
  float* d = nullptr;
  REQUIRE(cudaMalloc(&d, 64) == cudaSuccess);
  CHECK(cudaMemsetAsync(d, 0, 64, s) == cudaSuccess);
  CHECK(cudaMemcpyAsync(d, d, 64, cudaMemcpyDeviceToDevice, s) == cudaSuccess);
  cudaFree(d);
  CHECK(cudaEventDestroy(a) == cudaSuccess);
  CHECK(cudaEventDestroy(b) == cudaSuccess);
  CHECK(cudaEventDestroy(untimed) == cudaSuccess);
  CHECK(cudaEventDestroy(a) == cudaErrorInvalidResourceHandle);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaErrorInvalidResourceHandle);
  CHECK(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(0x1234)) == cudaErrorInvalidResourceHandle);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
  (void)cudaGetLastError();

  int count = 0, device = -1;
  CHECK(cudaGetDeviceCount(&count) == cudaSuccess);
  CHECK(count == 1);
  CHECK(cudaSetDevice(0) == cudaSuccess);
  CHECK(cudaGetDevice(&device) == cudaSuccess);
  CHECK(device == 0);
  CHECK(cudaSetDevice(1) == cudaErrorInvalidDevice);
  CHECK(std::string(cudaGetErrorName(cudaGetLastError())) == "cudaErrorInvalidDevice");
  cudaDeviceProp p;
  REQUIRE(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
  CHECK(p.major == 9);
  CHECK(p.minor == 0);
  CHECK(p.warpSize == 32);
  CHECK(p.maxThreadsPerBlock == 1024);
  CHECK(p.sharedMemPerBlock == 48 * 1024);
  CHECK(p.sharedMemPerBlockOptin == 232448);
  CHECK(p.multiProcessorCount == 132);
  CHECK(std::string(p.name).find("sm_90") != std::string::npos);
  int value = 0;
  CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess);
  CHECK(value == 232448);
  size_t free_bytes = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
  CHECK(total == (size_t{80} << 30));
  CHECK(free_bytes <= total);
  CHECK(std::string(cudaGetErrorString(cudaErrorMemoryAllocation)) == "out of memory");
}
