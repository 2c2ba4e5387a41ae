// Helpers of the simulator's test suite: device buffers, schedules to sweep (element-wise
// comparison: tests/common/compare.h, included here), and running one test case in a child process (for faults that end the process:
// segmentation faults, sanitizer reports).
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/sim/sim.h"
#include "tests/common/compare.h"

// Which sanitizer this build has (the CMake option SEG_SANITIZE).
#if defined(__SANITIZE_ADDRESS__)
#define SEG_SIM_TEST_ASAN 1  // ASan + UBSan
#else
#define SEG_SIM_TEST_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__)
#define SEG_SIM_TEST_TSAN 1
#else
#define SEG_SIM_TEST_TSAN 0
#endif

namespace simtest {

// cudaMalloc'd memory with copies to and from std::vector.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) { REQUIRE(cudaMalloc(&p_, n * sizeof(T)) == cudaSuccess); }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return static_cast<T*>(p_); }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() == n_);
    REQUIRE(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    REQUIRE(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return host;
  }
  void fill_bytes(int value) { REQUIRE(cudaMemset(p_, value, n_ * sizeof(T)) == cudaSuccess); }

 private:
  void* p_ = nullptr;
  size_t n_;
};

// A named configuration of the simulator: the good kernels must pass under every one of them.
struct Config {
  std::string name;
  seg::sim::Options options;
};
std::vector<Config> all_configs();

seg::sim::Options with_schedule(seg::sim::Schedule s, uint64_t seed = 1, int workers = 1);

// Result of running this executable on one test case in a child process.
struct ChildResult {
  int exit_code = -1;  // when it exited normally
  int signal = 0;      // when a signal killed it
  std::string output;  // stdout and stderr together
};
// Runs the test case `name` (marked doctest::skip() so it only runs when asked for) in a child
// process whose SEG_SIM_* environment is exactly `env` (e.g. {"SEG_SIM_WORKERS=2"}).
ChildResult run_child(const std::string& name, const std::vector<std::string>& env = {});

}  // namespace simtest
