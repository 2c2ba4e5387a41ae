// Helpers of the CUDA kernel tests of families B (pool, resize, batchnorm, conv2d): float data
// rounded into a storage type and widened back, per-dtype names and unit roundoffs, and DeviceArray,
// a device buffer that can start at an element offset (to drive the launchers' unaligned fallback).
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common/half.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace seg::test {

template <class T> std::vector<T> to_storage(const std::vector<float>& v) {
  std::vector<T> out;
  out.reserve(v.size());
  for (float f : v) out.push_back(static_cast<T>(f));
  return out;
}
template <class T> std::vector<double> widen(const std::vector<T>& v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (const T& t : v) out.push_back(static_cast<double>(static_cast<float>(t)));
  return out;
}

template <class T> std::string dtype_label() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  else if constexpr (std::is_same_v<T, f16>) return "f16";
  else return "bf16";
}
// Unit roundoff of the storage type (half an ulp, relative): 2^-24, 2^-11, 2^-8.
template <class T> double unit_roundoff() {
  if constexpr (std::is_same_v<T, float>) return 1.0 / (1 << 24);
  else if constexpr (std::is_same_v<T, f16>) return 1.0 / (1 << 11);
  else return 1.0 / (1 << 8);
}

// The agreement to expect between two f32 computations of one ordered sum of `terms` products that
// differ only in which multiply-adds each compiler fused into an fma (the CPU twin under g++, the
// kernel under nvcc or the simulator), then rounded to T: each side is within (terms+1)*2^-24 *
// sum|products| of the exact sum (the textbook bound of a recursive sum, plus one rounding per
// product), so their difference within twice that; the rounding to T adds up to one ulp of T
// (2*unit_roundoff relative; plus 2^-24 absolute for f16 subnormals).
template <class T> Tolerance f32_sum_tolerance(int64_t terms, double max_abs_sum) {
  Tolerance t;
  t.atol = 2.0 * static_cast<double>(terms + 1) * (1.0 / (1 << 24)) * max_abs_sum;
  if constexpr (!std::is_same_v<T, float>) {
    t.rtol = 2.0 * unit_roundoff<T>();
    if constexpr (std::is_same_v<T, f16>) t.atol += 1.0 / (1 << 24);
  }
  return t;
}

template <class T> double max_abs(const std::vector<T>& v) {
  double m = 0;
  for (const T& t : v) {
    const double a = std::fabs(static_cast<double>(static_cast<float>(t)));
    if (a > m) m = a;
  }
  return m;
}
template <class T> std::vector<T> abs_values(const std::vector<T>& v) {
  std::vector<T> out;
  out.reserve(v.size());
  for (const T& t : v) out.push_back(static_cast<T>(std::fabs(static_cast<float>(t))));
  return out;
}

// n elements of T at element `offset` of a DeviceBuffer (offset 1 makes a pointer that is not
// 16-byte aligned). poison() refills it with 0xFF bytes (NaN) so each schedule's run must write
// every element again.
template <class T> class DeviceArray {
 public:
  explicit DeviceArray(size_t n, size_t offset = 0) : buf_(n + offset), n_(n), off_(offset) {}
  DeviceArray(const std::vector<T>& host, size_t offset) : DeviceArray(host.size(), offset) { upload(host); }
  T* get() const { return buf_.get() + off_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() == n_);
    REQUIRE(cudaMemcpy(get(), host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  void poison() { REQUIRE(cudaMemset(get(), 0xFF, n_ * sizeof(T)) == cudaSuccess); }
  std::vector<T> download() const {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<T> host(n_);
    REQUIRE(cudaMemcpy(host.data(), get(), n_ * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return host;
  }

 private:
  DeviceBuffer<T> buf_;
  size_t n_, off_;
};

}  // namespace seg::test
