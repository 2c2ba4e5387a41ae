// The test tree's one comparison helper (tests/common/compare.h) must not let a NaN through.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/common/half.h"
#include "tests/common/compare.h"
#include "tests/common/compare_tensor.h"

using seg::test::compare;
using seg::test::Tolerance;

TEST_CASE("compare: a planted NaN is a mismatch with an infinite error") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> want{1.0, 2.0, 3.0, 4.0};
  std::vector<double> got = want;
  got[2] = nan;
  const auto c = compare(got, want, Tolerance{1e-3, 1e-3});
  CHECK_FALSE(c.ok());
  CHECK(c.mismatches == 1);
  CHECK(c.nonfinite_mismatches == 1);
  CHECK(c.first_bad == 2);
  CHECK(std::isinf(c.max_abs));
  CHECK(std::isinf(c.max_rel));
  CHECK(std::isinf(c.rel_l2));
  // The same NaN on the want side only, and on both sides (agreement).
  CHECK_FALSE(compare(want, got, Tolerance{1, 1}).ok());
  CHECK(compare(got, got, Tolerance{}).ok());
}

TEST_CASE("compare: infinities agree only with the same infinity") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(compare(std::vector<double>{inf, -inf}, std::vector<double>{inf, -inf}).ok());
  CHECK_FALSE(compare(std::vector<double>{inf}, std::vector<double>{-inf}, Tolerance{1e300, 1}).ok());
  CHECK_FALSE(compare(std::vector<double>{1e308}, std::vector<double>{inf}, Tolerance{1e300, 1}).ok());
}

TEST_CASE("compare: tolerances, errors and the first mismatch") {
  const std::vector<float> want{1.0f, -2.0f, 0.0f, 100.0f};
  const std::vector<float> got{1.0f, -2.001f, 1e-7f, 100.5f};
  const auto loose = compare(got, want, Tolerance{1e-6, 1e-2});
  CHECK(loose.ok());
  CHECK(loose.max_abs == doctest::Approx(0.5));
  CHECK(loose.max_rel == doctest::Approx(0.005).epsilon(1e-3));
  const auto tight = compare(got, want, Tolerance{1e-6, 1e-4});
  CHECK(tight.mismatches == 2);  // -2.001 (err 1e-3 > 2e-4) and 100.5 (err 0.5 > 1e-2)
  CHECK(tight.first_bad == 1);
  CHECK(tight.first_got == doctest::Approx(-2.001));
  CHECK(tight.str().find("first at [1]") != std::string::npos);
  // Different lengths never pass.
  CHECK_FALSE(compare(std::vector<float>{1}, std::vector<float>{1, 2}).ok());
}

TEST_CASE("compare: half types and tensors") {
  const std::vector<seg::f16> h{seg::f16(1.5f), seg::f16(std::numeric_limits<float>::quiet_NaN())};
  const std::vector<float> f{1.5f, 0.0f};
  const auto c = compare(h, f, Tolerance{1e-3, 0});
  CHECK(c.mismatches == 1);
  CHECK(c.first_bad == 1);
  const seg::Tensor a = seg::Tensor::from_vector<float>({2}, {1.0f, 2.0f});
  const seg::Tensor b = seg::Tensor::from_vector<float>({2}, {1.0f, std::numeric_limits<float>::quiet_NaN()});
  CHECK_FALSE(compare(a, b, Tolerance{1, 1}).ok());
  CHECK(compare(a, a).ok());
  CHECK_FALSE(compare(a, seg::Tensor::from_vector<float>({1, 2}, {1.0f, 2.0f})).ok());  // shapes differ
}

TEST_CASE("compare: the relative L2 error, and what a tensor of zeros gets") {
  const std::vector<double> want{3.0, 4.0};  // ||want|| = 5
  CHECK(compare(std::vector<double>{3.0, 4.0}, want).rel_l2 == 0.0);
  CHECK(compare(std::vector<double>{3.0, 5.0}, want).rel_l2 == doctest::Approx(0.2));  // ||(0, 1)|| / 5
  CHECK(compare(std::vector<double>{0.0, 0.0}, want).rel_l2 == doctest::Approx(1.0));
  CHECK(compare(std::vector<double>{0.0}, std::vector<double>{0.0}).rel_l2 == 0.0);
  CHECK(std::isinf(compare(std::vector<double>{1.0}, std::vector<double>{0.0}).rel_l2));
}
