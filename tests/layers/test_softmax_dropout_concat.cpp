#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/gradcheck.h"
#include "layers/ops.h"
#include "tests/layers/test_helpers.h"

using namespace seg;
using seg::test::max_abs_diff;
using seg::test::randn;

TEST_CASE("softmax and log_softmax over channels: values, gradients, argmax") {
  const Tensor x = randn({2, 3, 4, 5}, DType::f64, 1, 3.0);
  const auto v = x.to_vector<double>();
  const auto s = ops::softmax(x).to_vector<double>(), ls = ops::log_softmax(x).to_vector<double>();
  const auto am = ops::argmax_channels(x).to_vector<int32_t>();
  for (int64_t p = 0; p < 24; ++p) {
    double z = 0;
    int32_t best = 0;
    for (int c = 0; c < 5; ++c) {
      z += std::exp(v[p * 5 + c]);
      if (v[p * 5 + c] > v[p * 5 + best]) best = c;
    }
    for (int c = 0; c < 5; ++c) {
      CHECK(s[p * 5 + c] == doctest::Approx(std::exp(v[p * 5 + c]) / z).epsilon(1e-12));
      CHECK(ls[p * 5 + c] == doctest::Approx(v[p * 5 + c] - std::log(z)).epsilon(1e-12));
    }
    CHECK(am[p] == best);
  }
  CHECK(ops::argmax_channels(x).shape() == Shape{2, 3, 4});
  for (auto fn : {ops::softmax, ops::log_softmax}) {
    const GradCheckResult r = gradcheck([fn](const std::vector<Tensor>& in) { return fn(in[0]); }, {x});
    CHECK_MESSAGE(r.ok, r.report);
  }
}

TEST_CASE("dropout2d zeroes whole channels, scales the rest, and is reproducible per stream") {
  const double p = 0.25;
  reset_global_rng(7);
  const Tensor x = randn({16, 3, 3, 64}, DType::f64, 2, 1.0, 5.0);  // no zeros in x
  const Tensor y = ops::dropout2d(x, p, true);
  const auto vx = x.to_vector<double>(), vy = y.to_vector<double>();
  int64_t dropped = 0;
  for (int64_t n = 0; n < 16; ++n)
    for (int64_t c = 0; c < 64; ++c) {
      const bool zero = vy[(n * 9) * 64 + c] == 0.0;
      dropped += zero;
      for (int64_t hw = 0; hw < 9; ++hw) {
        const size_t i = static_cast<size_t>((n * 9 + hw) * 64 + c);
        CHECK(vy[i] == doctest::Approx(zero ? 0.0 : vx[i] / (1 - p)).epsilon(1e-12));
      }
    }
  CHECK(dropped == doctest::Approx(p * 1024).epsilon(0.25));
  // A second call draws a new mask; resetting the RNG state repeats the first.
  const Tensor y2 = ops::dropout2d(x, p, true);
  CHECK(max_abs_diff(y, y2) > 0);
  reset_global_rng(7);
  CHECK(max_abs_diff(y, ops::dropout2d(x, p, true)) == 0);
  // Eval: identity.
  CHECK(ops::dropout2d(x, p, false).same(x));
  // Gradient: dy masked and scaled the same way.
  Tensor xg = x.clone();
  xg.set_requires_grad(true);
  reset_global_rng(7);
  ops::sum(ops::dropout2d(xg, p, true)).backward();
  const auto g = xg.grad().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(vy[i] == 0.0 ? 0.0 : 1.0 / (1 - p)));
}

TEST_CASE("concat_channels: values and gradients") {
  const Tensor a = randn({2, 3, 3, 2}, DType::f64, 1), b = randn({2, 3, 3, 5}, DType::f64, 2);
  const Tensor c = ops::concat_channels({a, b});
  CHECK(c.shape() == Shape{2, 3, 3, 7});
  CHECK(max_abs_diff(c.channels(0, 2), a) == 0);
  CHECK(max_abs_diff(c.channels(2, 7), b) == 0);
  const GradCheckResult r = gradcheck(
      [](const std::vector<Tensor>& in) { return ops::mul(ops::concat_channels({in[0], in[1]}),
                                                          ops::concat_channels({in[0], in[1]})); },
      {a, b});
  CHECK_MESSAGE(r.ok, r.report);
  CHECK_THROWS_AS(ops::concat_channels({a, randn({2, 4, 3, 2}, DType::f64, 3)}), Error);
}
