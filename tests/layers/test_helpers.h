// Shared helpers for the layer tests: random tensors (comparisons: tests/common/compare_tensor.h).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "layers/ops.h"
#include "tests/common/compare_tensor.h"

namespace seg::test {

inline Tensor randn(const Shape& shape, DType dt, uint64_t seed, double scale = 1.0, double shift = 0.0) {
  PhiloxStream rng(seed, RngPurpose::test);
  Tensor t = Tensor::empty(shape, DType::f64, Device::cpu());
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = shift + scale * rng.normal();
  return t.to(dt);
}

// SyncBN's reference (tests/mpi, tests/cuda): N images of H x W x C and one BatchNorm over all of
// them, forward and backward, in f64 on the CPU; each rank then normalises its rows of x.
// `storage` (f16, bf16): x and dy are first rounded to that dtype (and kept in f64), so a run in
// that storage dtype has exactly the reference's inputs and differs from it only by its own
// arithmetic and the rounding of its outputs.
struct UnionBatchNorm {
  Tensor x, dy, gamma, beta;         // the inputs (f64)
  Tensor y, dx, dgamma, dbeta;       // the reference's output and gradients
  Tensor running_mean, running_var;  // after the one update
  ops::BatchNormOptions options;     // momentum 0.25, no reducer
};

inline UnionBatchNorm union_batch_norm(int64_t N, int64_t H, int64_t W, int64_t C, DType storage = DType::f64) {
  UnionBatchNorm r;
  r.x = randn({N, H, W, C}, DType::f64, 31, 2.0).to(storage).to(DType::f64);
  r.dy = randn({N, H, W, C}, DType::f64, 32).to(storage).to(DType::f64);
  r.gamma = randn({C}, DType::f64, 33);
  r.beta = randn({C}, DType::f64, 34);
  r.running_mean = Tensor::zeros({C}, DType::f64, Device::cpu());
  r.running_var = Tensor::full({C}, 1.0, DType::f64, Device::cpu());
  Tensor x = r.x.clone().set_requires_grad(true);
  Tensor g = r.gamma.clone().set_requires_grad(true), b = r.beta.clone().set_requires_grad(true);
  r.options.momentum = 0.25;
  r.y = ops::batch_norm(x, g, b, r.running_mean, r.running_var, r.options);
  r.y.backward(r.dy);
  r.dx = x.grad();
  r.dgamma = g.grad();
  r.dbeta = b.grad();
  return r;
}

}  // namespace seg::test
