// Bounds for results checked against the PyTorch goldens of tools/golden/make_op_goldens.py and
// make_model_goldens.py.
//
// Those scripts run each case twice in PyTorch, in float64 and in float32. The golden files hold the
// float64 results (rounded to float32 for storage), and f32_error.json holds, for every stored
// result, PyTorch's own float32 error on the same case: max |torch f32 - torch f64| over the tensor
// (with max |torch f64| beside it) and the relative L2 error ||torch f32 - torch f64|| / ||torch f64||.
// Every bound is a multiple of what the reference itself achieves:
//
//   float32 run, per element  |ours - golden| <= 8 x PyTorch's max float32 error + 2^-24 |golden|
//   float32 run, whole tensor ||ours - golden|| / ||golden|| <= 8 x PyTorch's relative L2 error + 2^-23
//   float64 run, per element  |ours - golden| <= max(1e-12 max|golden|, 8 x PyTorch's max float32
//                             error x 2^-29) + 2^-23 |golden|
//
// (tests/common/compare.h, so a NaN fails). 2^-24 relative is the golden files' own float32 storage
// rounding (half an ulp; for float64, whose results sit right at the rounding, twice that). 2^-29 is
// double's unit roundoff over float's: a quantity that PyTorch's float32 run gets wrong by E is
// amplified that much by the computation, and a float64 run then differs by about E x 2^-29 between
// two summation orders (the deep gradients of the stride-32 ResNets, which float32 cannot compute at
// all, need it); 1e-12 of the largest value covers the well-conditioned rest.
//
// The whole-tensor bound is what makes every float32 check able to fail: a tensor of zeros has
// relative L2 error 1, and golden_check REQUIREs the bound to stay below 1/2. The per-element bound
// alone could not do that for the deep gradients whose float32 error PyTorch itself leaves at half
// their largest value and more.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/common/compare_tensor.h"

namespace seg::test {

// The multiple of PyTorch's own float32 error that ours may reach (same input, same weights, a
// different order of float32 sums). Measured: ours is within 0.01-2.7x of PyTorch's on every op and
// model tensor (docs/models.md lists the model numbers); 8 leaves room for other compilers, ISAs and
// thread counts without hiding a real error.
constexpr double kF32Multiple = 8;

struct TorchF32Error {
  double max_abs_err = 0;  // max |torch f32 - torch f64|
  double max_abs_ref = 0;  // max |torch f64|
  double rel_l2_err = 0;   // ||torch f32 - torch f64|| / ||torch f64||
};

// The tensor entries of <dir>/f32_error.json as {result name: error} (the model goldens' scalar
// entries, "metrics.*", are read where they are used).
inline std::map<std::string, TorchF32Error> read_f32_errors(const std::string& dir) {
  std::ifstream in(dir + "/f32_error.json");
  REQUIRE_MESSAGE(in.good(), "no " << dir << "/f32_error.json (tools/golden/ regenerates it)");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::map<std::string, TorchF32Error> out;
  for (const auto& [key, v] : j.items())
    if (v.is_object())
      out[key] = {v.at("max_abs_err").get<double>(), v.at("max_abs_ref").get<double>(),
                  v.at("rel_l2_err").get<double>()};
  return out;
}

// Checks `ours` (run in `dt`, f32 or f64) against the golden `ref` with the bounds above.
// SEG_GOLDEN_VERBOSE=1 prints our errors beside PyTorch's.
inline void golden_check(const Tensor& ours, const Tensor& ref, const TorchF32Error& e, DType dt, const std::string& what) {
  CAPTURE(what);
  const std::string dtype = dtype_name(dt);
  CAPTURE(dtype);
  const bool f64 = dt == DType::f64;
  const Tolerance tol = f64 ? Tolerance{std::max(1e-12 * e.max_abs_ref, kF32Multiple * e.max_abs_err * std::ldexp(1.0, -29)),
                                        std::ldexp(1.0, -23)}
                            : Tolerance{kF32Multiple * e.max_abs_err, std::ldexp(1.0, -24)};
  const Comparison c = compare(ours, ref, tol);
  CHECK_MESSAGE(c.ok(), c.str());
  if (!f64) {
    const double l2_bound = kF32Multiple * e.rel_l2_err + std::ldexp(1.0, -23);
    REQUIRE_MESSAGE(l2_bound < 0.5, what << ": the relative L2 bound " << l2_bound
                                         << " would let a tensor of zeros pass (PyTorch's own float32 error is "
                                         << e.rel_l2_err << ")");
    CHECK_MESSAGE(c.rel_l2 <= l2_bound, "relative L2 error " << c.rel_l2 << " > " << l2_bound << "; " << c.str());
  }
  if (std::getenv("SEG_GOLDEN_VERBOSE"))
    MESSAGE(dtype << " " << what << ": max err " << c.max_abs << " (PyTorch f32 " << e.max_abs_err << ", x"
                  << (e.max_abs_err > 0 ? c.max_abs / e.max_abs_err : 0.0) << "), rel L2 " << c.rel_l2 << " (PyTorch "
                  << e.rel_l2_err << ", x" << (e.rel_l2_err > 0 ? c.rel_l2 / e.rel_l2_err : 0.0) << "), max|ref| "
                  << e.max_abs_ref);
}

}  // namespace seg::test
