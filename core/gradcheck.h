// Finite-difference gradient checker (Caffe's GradientChecker, PyTorch's gradcheck), in double.
//
// For f(inputs) -> y, the checker draws a fixed random weight tensor r like y and compares, for
// input elements x_i, the analytic gradient of L = sum(r * y) from backward() with the central
// difference (L(x_i + eps) - L(x_i - eps)) / (2 eps). Every f64 input is checked; other inputs
// (labels) are passed through. Large inputs are sampled (max_checks_per_input elements).
//
// Kinks (ReLU at 0, max-pool ties) make finite differences meaningless at a few points. With
// skip_kinks, an element whose one-sided differences disagree is skipped and counted instead.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace seg {

struct GradCheckOptions {
  double eps = 1e-6;
  double atol = 1e-7;
  double rtol = 1e-5;
  int64_t max_checks_per_input = 200;  // 0 = every element
  bool skip_kinks = false;
  uint64_t seed = 1;
};

struct GradCheckResult {
  bool ok = true;
  int64_t checked = 0;
  int64_t skipped_kinks = 0;
  double max_abs_error = 0;
  std::string report;  // first failures, "input 1 element 7: analytic 0.25 numeric 0.5"
};

using GradCheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

GradCheckResult gradcheck(const GradCheckFn& fn, std::vector<Tensor> inputs, const GradCheckOptions& opt = {});

}  // namespace seg
