#include <doctest/doctest.h>

#include "core/autograd.h"
#include "core/gradcheck.h"
#include "layers/ops.h"
#include "tests/layers/test_helpers.h"

using namespace seg;
using seg::test::compare;
using seg::test::randn;
using seg::test::Tolerance;

TEST_CASE("softmax and log_softmax over channels: values, gradients, argmax") {
  const Tensor x = randn({2, 3, 4, 5}, DType::f64, 1, 3.0);
  const auto v = x.to_vector<double>();
  const auto s = ops::softmax(x).to_vector<double>(), ls = ops::log_softmax(x).to_vector<double>();
  const auto am = ops::argmax_channels(x).to_vector<int32_t>();
  std::vector<double> s_ref(v.size()), ls_ref(v.size());
  std::vector<int32_t> am_ref(24);
  for (int64_t p = 0; p < 24; ++p) {
    double z = 0;
    int32_t best = 0;
    for (int c = 0; c < 5; ++c) {
      z += std::exp(v[p * 5 + c]);
      if (v[p * 5 + c] > v[p * 5 + best]) best = c;
    }
    for (int c = 0; c < 5; ++c) {
      s_ref[p * 5 + c] = std::exp(v[p * 5 + c]) / z;
      ls_ref[p * 5 + c] = v[p * 5 + c] - std::log(z);
    }
    am_ref[p] = best;
  }
  // f64 with a max-shifted exponent on our side, the plain formula here: a few ulps apart.
  SEG_CHECK_CLOSE(s, s_ref, Tolerance{1e-15, 1e-12});
  SEG_CHECK_CLOSE(ls, ls_ref, Tolerance{1e-15, 1e-12});
  SEG_CHECK_CLOSE(am, am_ref, Tolerance{});
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
  std::vector<double> want(vy.size()), grad_want(vy.size());
  for (int64_t n = 0; n < 16; ++n)
    for (int64_t c = 0; c < 64; ++c) {
      const bool zero = vy[(n * 9) * 64 + c] == 0.0;  // the whole channel follows its first pixel
      dropped += zero;
      for (int64_t hw = 0; hw < 9; ++hw) {
        const size_t i = static_cast<size_t>((n * 9 + hw) * 64 + c);
        want[i] = zero ? 0.0 : vx[i] / (1 - p);
        grad_want[i] = zero ? 0.0 : 1.0 / (1 - p);
      }
    }
  SEG_CHECK_CLOSE(vy, want, Tolerance{0, 1e-15});  // x * (1 / (1 - p)) against x / (1 - p)
  // 1024 channels dropped with p = 0.25: 256 expected, sd 14; the bound is 4.5 sd.
  SEG_CHECK_CLOSE(static_cast<double>(dropped), p * 1024, Tolerance{64, 0});
  // A second call draws a new mask; resetting the RNG state repeats the first.
  const Tensor y2 = ops::dropout2d(x, p, true);
  CHECK_FALSE(compare(y, y2).ok());
  reset_global_rng(7);
  SEG_CHECK_CLOSE(y, ops::dropout2d(x, p, true), Tolerance{});
  // Eval: identity.
  CHECK(ops::dropout2d(x, p, false).same(x));
  // Gradient: dy masked and scaled the same way.
  Tensor xg = x.clone();
  xg.set_requires_grad(true);
  reset_global_rng(7);
  ops::sum(ops::dropout2d(xg, p, true)).backward();
  SEG_CHECK_CLOSE(xg.grad().to_vector<double>(), grad_want, Tolerance{0, 1e-15});
}

TEST_CASE("concat_channels: values and gradients") {
  const Tensor a = randn({2, 3, 3, 2}, DType::f64, 1), b = randn({2, 3, 3, 5}, DType::f64, 2);
  const Tensor c = ops::concat_channels({a, b});
  CHECK(c.shape() == Shape{2, 3, 3, 7});
  SEG_CHECK_CLOSE(c.channels(0, 2), a, Tolerance{});  // a copy: exact
  SEG_CHECK_CLOSE(c.channels(2, 7), b, Tolerance{});
  const GradCheckResult r = gradcheck(
      [](const std::vector<Tensor>& in) { return ops::mul(ops::concat_channels({in[0], in[1]}),
                                                          ops::concat_channels({in[0], in[1]})); },
      {a, b});
  CHECK_MESSAGE(r.ok, r.report);
  CHECK_THROWS_AS(ops::concat_channels({a, randn({2, 4, 3, 2}, DType::f64, 3)}), Error);
}
