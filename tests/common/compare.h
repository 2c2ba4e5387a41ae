// The one comparison helper for numbers in the whole test tree.
//
// compare(got, want, n, tol) compares element by element and reports what a reviewer needs to judge
// a failure: the largest absolute and relative errors, how many elements mismatch, and the first
// mismatching index with both values; also the relative L2 error ||got - want|| / ||want||, for
// bounds on a whole tensor (a tensor of zeros has relative L2 error 1).
//
// Element i matches when
//   * both are NaN, or both are the same infinity (the two sides agree), or
//   * both are finite and |got - want| <= atol + rtol * |want|.
// Everything else is a mismatch: a NaN or inf on one side only is never "an error of 0" (the
// trap of `err = std::max(err, std::abs(a - b))`, where std::max(0.0, NaN) is 0). When such a
// non-finite disagreement exists, max_abs, max_rel and rel_l2 are +inf, so a test that only looks
// at one of them fails too.
//
//   const auto c = seg::test::compare(got.data(), want.data(), n, {1e-6, 1e-5});
//   CHECK_MESSAGE(c.ok(), c.str());
//   SEG_CHECK_CLOSE(got_vector, want_vector, seg::test::Tolerance{1e-6, 0});   // the same, shorter
//   SEG_CHECK_CLOSE(loss, 0.6931, seg::test::Tolerance{0, 1e-6});              // two numbers
//
// Header-only and free of the project's libraries (kernels tests link nothing else); the Tensor
// overloads are in tests/common/compare_tensor.h.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace seg::test {

struct Tolerance {
  double atol = 0;  // absolute
  double rtol = 0;  // relative to |want|
};

struct Comparison {
  int64_t count = 0;       // elements compared
  int64_t mismatches = 0;  // elements outside the tolerance, non-finite disagreements included
  int64_t nonfinite_mismatches = 0;  // of those: NaN or inf on one side (or opposite infinities)
  double max_abs = 0;      // largest |got - want| (+inf if any non-finite disagreement)
  double max_rel = 0;      // largest |got - want| / |want| over want != 0 (+inf likewise)
  double rel_l2 = 0;       // ||got - want|| / ||want|| (0 / 0 = 0; +inf likewise)
  int64_t first_bad = -1;  // index of the first mismatch, -1 if none
  double first_got = 0, first_want = 0;
  Tolerance tol;

  bool ok() const { return mismatches == 0; }
  std::string str() const {
    std::ostringstream os;
    os.precision(9);
    os << count << " elements, " << mismatches << " mismatches";
    if (nonfinite_mismatches) os << " (" << nonfinite_mismatches << " non-finite)";
    os << ", max abs err " << max_abs << ", max rel err " << max_rel << ", rel L2 err " << rel_l2 << " (atol "
       << tol.atol << ", rtol " << tol.rtol << ")";
    if (first_bad >= 0) os << "; first at [" << first_bad << "]: got " << first_got << ", want " << first_want;
    return os.str();
  }
};

namespace detail {
// Any element type the tests use (float, double, integers, seg::f16 / seg::bf16 which convert to
// float) as a double.
template <class T>
double as_double(const T& v) {
  if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(v);
  else return static_cast<double>(static_cast<float>(v));
}
}  // namespace detail

// Whether one pair matches under tol (the rule above).
inline bool close_enough(double got, double want, Tolerance tol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol.atol + tol.rtol * std::abs(want);
}

template <class G, class W>
Comparison compare(const G* got, const W* want, int64_t n, Tolerance tol = {}) {
  Comparison c;
  c.count = n;
  c.tol = tol;
  double diff2 = 0, want2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = detail::as_double(got[i]), w = detail::as_double(want[i]);
    const bool ok = close_enough(g, w, tol);
    if (std::isfinite(g) && std::isfinite(w)) {
      const double d = std::abs(g - w);
      if (d > c.max_abs) c.max_abs = d;
      if (w != 0 && d / std::abs(w) > c.max_rel) c.max_rel = d / std::abs(w);
      diff2 += d * d;
      want2 += w * w;
    } else if (!ok) {
      ++c.nonfinite_mismatches;
    }
    if (!ok) {
      if (c.first_bad < 0) {
        c.first_bad = i;
        c.first_got = g;
        c.first_want = w;
      }
      ++c.mismatches;
    }
  }
  if (c.nonfinite_mismatches) {
    c.max_abs = c.max_rel = c.rel_l2 = std::numeric_limits<double>::infinity();
  } else if (diff2 > 0) {
    c.rel_l2 = want2 > 0 ? std::sqrt(diff2 / want2) : std::numeric_limits<double>::infinity();
  }
  return c;
}

// One number against another (a loss, a statistic): the same rule and report as for arrays.
inline Comparison compare(double got, double want, Tolerance tol = {}) { return compare(&got, &want, 1, tol); }

template <class G, class W>
Comparison compare(const std::vector<G>& got, const std::vector<W>& want, Tolerance tol = {}) {
  if (got.size() != want.size()) {
    Comparison c;
    c.count = static_cast<int64_t>(got.size());
    c.mismatches = c.nonfinite_mismatches = 1;
    c.max_abs = c.max_rel = c.rel_l2 = std::numeric_limits<double>::infinity();
    c.first_bad = 0;
    c.first_got = static_cast<double>(got.size());
    c.first_want = static_cast<double>(want.size());
    c.tol = tol;
    return c;  // str(): "first at [0]: got <size>, want <size>"
  }
  return compare(got.data(), want.data(), static_cast<int64_t>(got.size()), tol);
}

}  // namespace seg::test

// CHECK / REQUIRE that got and want (two vectors, or anything with a compare() overload) agree;
// the failure message is Comparison::str().
#define SEG_CHECK_CLOSE(got, want, ...)                                 \
  do {                                                                  \
    const auto seg_cmp_ = ::seg::test::compare(got, want, __VA_ARGS__); \
    CHECK_MESSAGE(seg_cmp_.ok(), seg_cmp_.str());                       \
  } while (0)
#define SEG_REQUIRE_CLOSE(got, want, ...)                               \
  do {                                                                  \
    const auto seg_cmp_ = ::seg::test::compare(got, want, __VA_ARGS__); \
    REQUIRE_MESSAGE(seg_cmp_.ok(), seg_cmp_.str());                     \
  } while (0)
