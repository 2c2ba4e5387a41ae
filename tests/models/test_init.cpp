// Initialisation: upstream's decoder rule, He fan_out for encoders from scratch, Philox determinism.
//
// The standard deviations are estimates from n draws; each relative tolerance below is about 4-6
// standard errors of that estimate (a normal's sample std has relative error 1/sqrt(2n), a
// uniform's sqrt(0.2/n)). Constant tensors are compared element by element (a NaN fails).
#include <doctest/doctest.h>

#include <cmath>

#include "models/registry.h"
#include "tests/common/compare_tensor.h"

using namespace seg;
using seg::test::Tolerance;

namespace {

struct Moments {
  double mean = 0, std = 0, min = 0, max = 0;
};
Moments moments(const Tensor& t) {
  const auto v = t.to(DType::f64).to_vector<double>();
  Moments m{0, 0, v[0], v[0]};
  for (double x : v) m.mean += x, m.min = std::min(m.min, x), m.max = std::max(m.max, x);
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.std += (x - m.mean) * (x - m.mean);
  m.std = std::sqrt(m.std / static_cast<double>(v.size()));
  return m;
}

const Tensor& param(const Module& m, const std::string& name) {
  for (const auto& p : m.named_parameters())
    if (p.name == name) return *p.tensor;
  FAIL("no parameter " << name);
  throw 0;
}

}  // namespace

TEST_CASE("decoder init is upstream's: Kaiming-normal fan_in, default conv bias, BN 1 and 1e-4") {
  const auto dec = build_decoder("c1_deepsup", 320, 150);
  // cbr.0: 3x3, 320 -> 80: std sqrt(2 / (9*320)).
  const Moments w = moments(param(*dec, "cbr.0.weight"));
  SEG_CHECK_CLOSE(w.mean, 0.0, Tolerance{2e-4, 0});                    // 230400 draws: 4 sd is 1.1e-4
  SEG_CHECK_CLOSE(w.std, std::sqrt(2.0 / (9 * 320)), Tolerance{0, 0.01});  // 1 sd = 0.15%
  // conv_last: 1x1, 80 -> 150, bias U(+-1/sqrt(80)).
  const Moments b = moments(param(*dec, "conv_last.bias"));
  CHECK(b.max <= 1 / std::sqrt(80.0));
  CHECK(b.min >= -1 / std::sqrt(80.0));
  SEG_CHECK_CLOSE(b.std, 1 / std::sqrt(80.0) / std::sqrt(3.0), Tolerance{0, 0.15});  // 150 draws: 1 sd = 3.7%
  const Tensor& g = param(*dec, "cbr_deepsup.1.weight");
  const Tensor& beta = param(*dec, "cbr_deepsup.1.bias");
  SEG_CHECK_CLOSE(g, Tensor::full(g.shape(), 1.0, g.dtype()), Tolerance{});
  SEG_CHECK_CLOSE(beta, Tensor::full(beta.shape(), 1e-4, beta.dtype()), Tolerance{});  // the same float
}

TEST_CASE("encoder init from scratch: He-normal fan_out, BN 1 and 0, running statistics 0 and 1") {
  const auto enc = build_encoder("mobilenetv2dilated", 320);
  // features.17.conv.0: 1x1, 160 -> 960: std sqrt(2 / 960).
  const Moments w = moments(param(*enc, "features.17.conv.0.weight"));
  SEG_CHECK_CLOSE(w.std, std::sqrt(2.0 / 960), Tolerance{0, 0.01});  // 153600 draws: 1 sd = 0.18%
  // features.16.conv.3: depthwise 3x3 on 960 channels: fan_out = 9 * 960 (upstream's n = k*k*out).
  const Moments d = moments(param(*enc, "features.16.conv.3.weight"));
  SEG_CHECK_CLOSE(d.std, std::sqrt(2.0 / (9 * 960)), Tolerance{0, 0.03});  // 8640 draws: 1 sd = 0.76%
  const Tensor& beta = param(*enc, "features.0.1.bias");
  SEG_CHECK_CLOSE(beta, Tensor::zeros(beta.shape(), beta.dtype()), Tolerance{});
  for (BatchNorm2d* bn : enc->batch_norms()) {
    SEG_CHECK_CLOSE(bn->running_mean, Tensor::zeros(bn->running_mean.shape(), DType::f32), Tolerance{});
    SEG_CHECK_CLOSE(bn->running_var, Tensor::full(bn->running_var.shape(), 1.0, DType::f32), Tolerance{});
  }
}

TEST_CASE("a seed gives the same model; another seed another one; tensors draw independently") {
  BuildOptions a, b;
  b.seed = 305;
  const auto d1 = build_decoder("c1_deepsup", 320, 150, a), d2 = build_decoder("c1_deepsup", 320, 150, a),
             d3 = build_decoder("c1_deepsup", 320, 150, b);
  const auto p1 = d1->named_parameters(), p2 = d2->named_parameters(), p3 = d3->named_parameters();
  for (size_t i = 0; i < p1.size(); ++i) {
    CAPTURE(p1[i].name);
    CHECK(p1[i].tensor->to_vector<float>() == p2[i].tensor->to_vector<float>());
    if (p1[i].tensor->dim() == 4) CHECK(p1[i].tensor->to_vector<float>() != p3[i].tensor->to_vector<float>());
  }
  // Each tensor has its own stream (keyed by name): the two heads do not share values.
  const auto a1 = param(*d1, "conv_last.weight").to_vector<float>(), a2 = param(*d1, "conv_last_deepsup.weight").to_vector<float>();
  CHECK(a1 != a2);
  // Same name, same shape, same seed: the same values whatever model holds them (c1 has conv_last too).
  const auto c1 = build_decoder("c1", 320, 150, a);
  CHECK(param(*c1, "conv_last.weight").to_vector<float>() == a1);
}
