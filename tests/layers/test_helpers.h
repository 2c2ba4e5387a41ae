// Shared helpers for the layer tests: random tensors (comparisons: tests/common/compare_tensor.h).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "tests/common/compare_tensor.h"

namespace seg::test {

inline Tensor randn(const Shape& shape, DType dt, uint64_t seed, double scale = 1.0, double shift = 0.0) {
  PhiloxStream rng(seed, RngPurpose::test);
  Tensor t = Tensor::empty(shape, DType::f64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = shift + scale * rng.normal();
  return t.to(dt);
}

}  // namespace seg::test
