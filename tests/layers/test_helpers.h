// Shared helpers for the layer tests: random tensors and comparisons.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"

namespace seg::test {

inline Tensor randn(const Shape& shape, DType dt, uint64_t seed, double scale = 1.0, double shift = 0.0) {
  PhiloxStream rng(seed, RngPurpose::test);
  Tensor t = Tensor::empty(shape, DType::f64, Device::cpu());
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = shift + scale * rng.normal();
  return t.to(dt);
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto va = a.to(DType::f64).to_vector<double>(), vb = b.to(DType::f64).to_vector<double>();
  REQUIRE(va.size() == vb.size());
  double m = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(va[i]) != std::isnan(vb[i])) return INFINITY;
    if (!std::isnan(va[i])) m = std::max(m, std::abs(va[i] - vb[i]));
  }
  return m;
}

}  // namespace seg::test
