// compare() for Tensors: both sides are brought to the CPU as f64 and compared element by element
// with the rule of tests/common/compare.h. Different shapes are one (non-finite) mismatch.
#pragma once

#include "core/tensor.h"
#include "tests/common/compare.h"

namespace seg::test {

inline Comparison compare(const Tensor& got, const Tensor& want, Tolerance tol = {}) {
  if (got.shape() != want.shape()) {
    Comparison c = compare(std::vector<double>(1), std::vector<double>(2), tol);  // a size mismatch
    c.count = got.numel();
    return c;
  }
  const std::vector<double> g = got.to(DType::f64).to_vector<double>(), w = want.to(DType::f64).to_vector<double>();
  return compare(g, w, tol);
}

}  // namespace seg::test
