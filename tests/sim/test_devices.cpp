// Several simulated devices (docs/cuda-simulator.md, "Several devices"): count, current device per
// host thread, memory per device, streams and events per device, peer access.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/sim/sim_test_util.h"
#include "tests/sim/stream_test_kernels.h"

namespace ks = simtest::streams;

namespace {

// Runs `launch_and_sync`, returns the KernelFault it throws (or fails).
template <class F>
seg::sim::KernelFault expect_fault(F launch_and_sync) {
  try {
    launch_and_sync();
  } catch (const seg::sim::KernelFault& f) {
    return f;
  }
  FAIL("no KernelFault");
  return seg::sim::KernelFault(seg::sim::FaultKind::trap, "");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// cudaMalloc on `device`, leaving the current device as it was.
float* malloc_on(int device, size_t n) {
  int saved = 0;
  REQUIRE(cudaGetDevice(&saved) == cudaSuccess);
  REQUIRE(cudaSetDevice(device) == cudaSuccess);
  float* p = nullptr;
  REQUIRE(cudaMalloc(&p, n * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaSetDevice(saved) == cudaSuccess);
  return p;
}

}  // namespace

TEST_CASE("devices: the count, and the current device per host thread") {
  CHECK(seg::sim::device_count() == 1);  // SEG_SIM_DEVICES unset
  seg::sim::ScopedDeviceCount devices(3);
  int count = 0, device = -1;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  CHECK(count == 3);
  CHECK(cudaSetDevice(3) == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  REQUIRE(cudaSetDevice(2) == cudaSuccess);
  int other = -1;
  std::thread t([&] { REQUIRE(cudaGetDevice(&other) == cudaSuccess); });  // a new thread starts on device 0
  t.join();
  CHECK(other == 0);
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  CHECK(device == 2);
  cudaDeviceProp p0, p2;
  REQUIRE(cudaGetDeviceProperties(&p0, 0) == cudaSuccess);
  REQUIRE(cudaGetDeviceProperties(&p2, 2) == cudaSuccess);
  CHECK(p0.major == 9);
  CHECK(p2.major == 9);
  CHECK(p0.pciBusID != p2.pciBusID);
  CHECK(contains(p2.name, "#2"));
  CHECK(cudaGetDeviceProperties(&p0, 3) == cudaErrorInvalidDevice);
  (void)cudaGetLastError();
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("devices: memory is accounted per device") {
  seg::sim::ScopedDeviceCount devices(2);
  size_t free0 = 0, free1 = 0, total = 0, after0 = 0, after1 = 0;
  REQUIRE(cudaMemGetInfo(&free0, &total) == cudaSuccess);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  REQUIRE(cudaMemGetInfo(&free1, &total) == cudaSuccess);
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, 3 << 20) == cudaSuccess);
  REQUIRE(cudaMemGetInfo(&after1, &total) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  REQUIRE(cudaMemGetInfo(&after0, &total) == cudaSuccess);
  CHECK(free1 - after1 == size_t{3} << 20);
  CHECK(after0 == free0);  // device 0 is untouched
  CHECK(total == size_t{80} << 30);
  // A device that holds memory cannot be removed.
  CHECK_THROWS_AS(seg::sim::set_device_count(1), std::logic_error);
  REQUIRE(cudaFree(p) == cudaSuccess);
}

TEST_CASE("devices: streams and events belong to the device current at their creation") {
  seg::sim::ScopedDeviceCount devices(2);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  cudaStream_t s1;
  cudaEvent_t e1;
  REQUIRE(cudaStreamCreate(&s1) == cudaSuccess);
  REQUIRE(cudaEventCreate(&e1) == cudaSuccess);
  float* y = nullptr;
  REQUIRE(cudaMalloc(&y, 64 * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  int device = -1;
  REQUIRE(cudaStreamGetDevice(s1, &device) == cudaSuccess);
  CHECK(device == 1);
  // A launch into another device's stream is refused at the call.
  const seg::sim::KernelFault f = expect_fault([&] { ks::fill(y, 64, 1.0f, s1); });
  CHECK(f.kind() == seg::sim::FaultKind::invalid_stream);
  CHECK(contains(f.what(), "cudaErrorInvalidResourceHandle"));
  CHECK(contains(f.what(), "the stream belongs to device 1 but device 0 is current"));
  // An event records only on a stream of its own device.
  cudaEvent_t e0;
  REQUIRE(cudaEventCreate(&e0) == cudaSuccess);
  CHECK(cudaEventRecord(e0, s1) == cudaErrorInvalidResourceHandle);
  CHECK(cudaEventRecord(e1, s1) == cudaSuccess);
  // cudaDeviceSynchronize waits for the current device only: device 1's fill has not run.
  seg::sim::Options no_races;
  no_races.race_check = false;
  seg::sim::ScopedOptions scoped(no_races);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  float* pinned = nullptr;
  REQUIRE(cudaMallocHost(&pinned, 64 * sizeof(float)) == cudaSuccess);
  ks::fill(pinned, 64, 5.0f, s1);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(pinned[0] != 5.0f);
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(pinned[0] == 5.0f);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  (void)cudaGetLastError();
  cudaFreeHost(pinned);
  cudaFree(y);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaStreamDestroy(s1);
}

TEST_CASE("devices: peer access rules") {
  seg::sim::ScopedDeviceCount devices(2);
  int can = -1;
  REQUIRE(cudaDeviceCanAccessPeer(&can, 0, 1) == cudaSuccess);
  CHECK(can == 1);
  REQUIRE(cudaDeviceCanAccessPeer(&can, 1, 1) == cudaSuccess);
  CHECK(can == 0);  // a device is not its own peer
  CHECK(cudaDeviceCanAccessPeer(&can, 0, 2) == cudaErrorInvalidDevice);
  CHECK(cudaDeviceEnablePeerAccess(0, 0) == cudaErrorInvalidDevice);  // device 0 is current
  CHECK(cudaDeviceEnablePeerAccess(1, 1) == cudaErrorInvalidValue);   // flags must be 0
  CHECK(cudaDeviceDisablePeerAccess(1) == cudaErrorPeerAccessNotEnabled);
  CHECK(cudaDeviceEnablePeerAccess(1, 0) == cudaSuccess);
  CHECK(cudaDeviceEnablePeerAccess(1, 0) == cudaErrorPeerAccessAlreadyEnabled);
  CHECK(cudaDeviceDisablePeerAccess(1) == cudaSuccess);
  (void)cudaGetLastError();
}

TEST_CASE("devices: a kernel given another device's memory faults unless peer access is enabled") {
  seg::sim::ScopedDeviceCount devices(2);
  const int n = 100;
  float* x1 = malloc_on(1, n);  // device 1's memory
  float* y0 = malloc_on(0, n);
  REQUIRE(cudaMemset(x1, 0, n * sizeof(float)) == cudaSuccess);
  const seg::sim::KernelFault f = expect_fault([&] {
    ks::affine(x1, y0, n, 2.0f, 3.0f, 0);  // launched on device 0
    cudaDeviceSynchronize();
  });
  CHECK(f.kind() == seg::sim::FaultKind::peer_access);
  INFO(f.what());
  if (SEG_SIM_TEST_INSTRUMENTED) {
    // The pointer checks stop the first load from device 1's memory.
    CHECK(contains(f.what(), "4-byte load from 0x"));
    CHECK(contains(f.what(), "is in a 400-byte device allocation at"));
    CHECK(contains(f.what(), "but the kernel runs on device 0, which has no peer access to device 1"));
    CHECK(contains(f.what(), "in kernel affine_kernel <<<"));
  } else {
    // Without instrumentation the launch checks its pointer arguments.
    CHECK(contains(f.what(), "kernel affine_kernel launched at tests/sim/streams.cu:"));
    CHECK(contains(f.what(), "on device 0 was given a pointer into device 1's memory (argument 1"));
  }
  CHECK(contains(f.what(), "call cudaDeviceEnablePeerAccess(1, 0) while device 0 is current"));

  REQUIRE(cudaDeviceEnablePeerAccess(1, 0) == cudaSuccess);
  ks::affine(x1, y0, n, 2.0f, 3.0f, 0);
  std::vector<float> got(n);
  REQUIRE(cudaMemcpy(got.data(), y0, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
  SEG_CHECK_CLOSE(got, std::vector<float>(got.size(), 3.0f), seg::test::Tolerance{});
  REQUIRE(cudaDeviceDisablePeerAccess(1) == cudaSuccess);
  cudaFree(x1);
  cudaFree(y0);
}

TEST_CASE("devices: copies between devices need no peer access") {
  seg::sim::ScopedDeviceCount devices(2);
  const int n = 50;
  float* a0 = malloc_on(0, n);
  float* b1 = malloc_on(1, n);
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  REQUIRE(cudaMemcpy(a0, host.data(), n * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaMemcpyPeerAsync(b1, 1, a0, 0, n * sizeof(float), s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  std::vector<float> back(n, -1.0f);
  REQUIRE(cudaMemcpy(back.data(), b1, n * sizeof(float), cudaMemcpyDefault) == cudaSuccess);
  CHECK(back == host);
  REQUIRE(cudaMemcpyPeer(a0, 0, b1, 1, n * sizeof(float)) == cudaSuccess);
  // Each pointer must be on the device named for it.
  CHECK(cudaMemcpyPeer(a0, 1, b1, 1, n * sizeof(float)) == cudaErrorInvalidValue);
  CHECK(cudaMemcpyPeer(a0, 0, b1, 2, n * sizeof(float)) == cudaErrorInvalidDevice);
  (void)cudaGetLastError();
  cudaStreamDestroy(s);
  cudaFree(a0);
  cudaFree(b1);
}
