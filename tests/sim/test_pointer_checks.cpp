// The pointer checks of kernel code (kernels/sim/access_check.h) in this process: what they accept
// (every kind of memory a kernel may use) and what they stop, with the report's details; and
// cudaPointerGetAttributes. The planted bugs in child processes are in test_broken_kernels.cpp.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "tests/sim/broken_kernels.h"
#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using simtest::DeviceBuffer;

namespace {

constexpr bool kNotInstrumented = !SEG_SIM_TEST_INSTRUMENTED;

// Launches run asynchronously (stream_executor.h): the fault of a kernel surfaces at the next
// synchronisation, as cudaErrorIllegalAddress does on a GPU, so the launch is followed by one.
template <class F>
seg::sim::KernelFault expect_fault(F launch) {
  try {
    launch();
    cudaDeviceSynchronize();
  } catch (const seg::sim::KernelFault& f) {
    return f;
  }
  FAIL("the launch did not fault");
  return seg::sim::KernelFault(seg::sim::FaultKind::trap, "");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<float> ramp(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = 0.5f * static_cast<float>(i % 11);
  return v;
}

}  // namespace

TEST_CASE("sim pointer checks: pinned and managed memory are valid in kernels") {
  const int n = 300;
  const std::vector<float> x = ramp(n);
  float* pinned = nullptr;
  float* managed = nullptr;
  REQUIRE(cudaHostAlloc(reinterpret_cast<void**>(&pinned), n * sizeof(float), cudaHostAllocDefault) == cudaSuccess);
  REQUIRE(cudaMallocManaged(reinterpret_cast<void**>(&managed), n * sizeof(float), cudaMemAttachGlobal) == cudaSuccess);
  std::copy(x.begin(), x.end(), pinned);
  DeviceBuffer<float> y(n);
  simtest::broken::scale_by_two(pinned, managed, n);  // reads pinned host memory, writes managed memory
  simtest::broken::scale_by_two(managed, y.get(), n);
  const std::vector<float> got = y.download();
  for (int i = 0; i < n; ++i) REQUIRE(got[i] == 4.0f * x[i]);
  cudaFreeHost(pinned);
  cudaFree(managed);
  // __device__ variables (an atomicAdd on one), built-ins and dynamic shared memory.
  CHECK(simtest::count_launches(2) == 2);
}

TEST_CASE("sim pointer checks: a host pointer stops the kernel with a report" * doctest::skip(kNotInstrumented)) {
  const int n = 200;
  const std::vector<float> host = ramp(n);
  DeviceBuffer<float> y(n);
  const seg::sim::KernelFault f = expect_fault([&] { simtest::broken::scale_by_two(host.data(), y.get(), n); });
  const std::string report = f.what();
  INFO(report);
  CHECK(f.kind() == seg::sim::FaultKind::bad_address);
  CHECK(contains(report, "4-byte load from 0x"));
  CHECK(contains(report, "is host memory"));
  CHECK(contains(report, "at tests/sim/broken_pointers.cu:14"));
  CHECK(contains(report, "in kernel scale_by_two_kernel <<<grid (2,1,1), block (128,1,1)"));
  CHECK(contains(report, "block (0,0,0), thread (0,0,0) (warp 0, lane 0)"));

  // The simulator carries on; with the checks off the host memory is simply read (not on a GPU).
  seg::sim::Options off;
  off.check_pointers = false;
  seg::sim::ScopedOptions scoped(off);
  simtest::broken::scale_by_two(host.data(), y.get(), n);
  CHECK(y.download()[n - 1] == 2.0f * host[n - 1]);
}

TEST_CASE("sim pointer checks: freed memory and overruns name the allocation" * doctest::skip(kNotInstrumented)) {
  const int n = 100;
  DeviceBuffer<float> y(n);
  float* x = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)) == cudaSuccess);
  REQUIRE(cudaFree(x) == cudaSuccess);
  const seg::sim::KernelFault freed = expect_fault([&] { simtest::broken::scale_by_two(x, y.get(), n); });
  INFO(freed.what());
  CHECK(freed.kind() == seg::sim::FaultKind::use_after_free);
  CHECK(contains(freed.what(), "is at byte offset 0 of a 400-byte device allocation"));
  CHECK(contains(freed.what(), "which was freed by DOCTEST_ANON_FUNC"));

  // 100 floats, 128 threads reading x[i] for i < 101: thread 100 reads the first byte past the end.
  DeviceBuffer<float> small(n);
  const seg::sim::KernelFault past = expect_fault([&] { simtest::broken::scale_by_two(small.get(), y.get(), n + 1); });
  INFO(past.what());
  CHECK(past.kind() == seg::sim::FaultKind::out_of_bounds);
  CHECK(contains(past.what(), "is 0 bytes past the end of a 400-byte device allocation"));
  CHECK(contains(past.what(), "thread (100,0,0) (warp 3, lane 4)"));
}

TEST_CASE("sim pointer checks: another thread's locals" * doctest::skip(kNotInstrumented)) {
  DeviceBuffer<float> y(64);
  const seg::sim::KernelFault f = expect_fault([&] { simtest::broken::read_other_threads_local(y.get()); });
  INFO(f.what());
  CHECK(f.kind() == seg::sim::FaultKind::bad_address);
  CHECK(contains(f.what(), "is in the stack (local variables) of thread 0 of the block"));
  CHECK(contains(f.what(), "thread (1,0,0)"));
}

TEST_CASE("sim runtime: cudaPointerGetAttributes") {
  cudaPointerAttributes a;
  float* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 1000) == cudaSuccess);
  REQUIRE(cudaPointerGetAttributes(&a, d + 10) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeDevice);
  CHECK(a.device == 0);
  CHECK(a.devicePointer == d + 10);
  CHECK(a.hostPointer == nullptr);

  void* managed = nullptr;
  REQUIRE(cudaMallocManaged(&managed, 64, cudaMemAttachGlobal) == cudaSuccess);
  REQUIRE(cudaPointerGetAttributes(&a, managed) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeManaged);
  CHECK(a.devicePointer == managed);
  CHECK(a.hostPointer == managed);

  void* pinned = nullptr;
  REQUIRE(cudaMallocHost(&pinned, 64) == cudaSuccess);
  REQUIRE(cudaPointerGetAttributes(&a, pinned) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeHost);
  CHECK(a.device == 0);
  CHECK(a.devicePointer == pinned);
  CHECK(a.hostPointer == pinned);

  std::vector<int> host(4);
  REQUIRE(cudaPointerGetAttributes(&a, host.data()) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeUnregistered);
  CHECK(a.device == cudaInvalidDeviceId);
  CHECK(a.devicePointer == nullptr);
  CHECK(a.hostPointer == host.data());

  // Freed memory is just an address again.
  REQUIRE(cudaFree(d) == cudaSuccess);
  REQUIRE(cudaPointerGetAttributes(&a, d) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeUnregistered);
  CHECK(cudaPointerGetAttributes(nullptr, host.data()) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  cudaFree(managed);
  cudaFreeHost(pinned);
}
