// Helpers of the CUDA kernel tests (tests/kernels/cuda): typed device buffers, the simulator
// configurations a kernel must pass under, and random inputs.
//
// The same test sources build twice: against the simulator (label sim) and against the nvcc build
// on a real GPU (label gpu, SEG_TEST_ON_GPU). configs() is what differs: the simulator sweeps
// schedules; a GPU has one "schedule", its own.
//
//   for (const auto& cfg : seg::test::cuda_configs()) {
//     seg::test::ScopedConfig scoped(cfg);
//     seg::cuda::relu_forward<float>(dx.get(), dy.get(), n, false, nullptr);
//     SEG_CHECK_CLOSE(dy.download(), want, seg::test::Tolerance{0, 0});
//   }
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/common/compare.h"

#ifndef SEG_TEST_ON_GPU
#include "kernels/sim/sim.h"
#endif

namespace seg::test {

// cudaMalloc'd memory of n elements of T (float, seg::f16, seg::bf16, int32_t, ...), with copies to
// and from std::vector. Fresh buffers are filled with 0xFF bytes (NaN for floats) so a kernel that
// forgets to write an element fails the comparison, on the GPU as in the simulator.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    REQUIRE(cudaMalloc(&p_, (n ? n : 1) * sizeof(T)) == cudaSuccess);
    REQUIRE(cudaMemset(p_, 0xFF, (n ? n : 1) * sizeof(T)) == cudaSuccess);
  }
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
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<T> host(n_);
    REQUIRE(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return host;
  }

 private:
  void* p_ = nullptr;
  size_t n_;
};

// One configuration a kernel test runs under.
struct CudaConfig {
  std::string name;
#ifndef SEG_TEST_ON_GPU
  sim::Options options;
#endif
};
// Simulator: round-robin, reverse, two random seeds, two workers. GPU: the one real device.
std::vector<CudaConfig> cuda_configs();
// The first configuration only (round-robin): for big cases where a sweep would be slow.
std::vector<CudaConfig> cuda_config_rr();

// Applies a configuration for a scope.
class ScopedConfig {
 public:
  explicit ScopedConfig(const CudaConfig& c);
  ~ScopedConfig();
  ScopedConfig(const ScopedConfig&) = delete;
  ScopedConfig& operator=(const ScopedConfig&) = delete;

 private:
#ifndef SEG_TEST_ON_GPU
  std::unique_ptr<sim::ScopedOptions> scoped_;
#endif
};

// Reproducible pseudo-random values (Philox), uniform in [lo, hi), as float.
std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace seg::test
