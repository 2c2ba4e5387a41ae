// kernels/common/fast_divmod.h against the / and % operators: every divisor 1..4096, each with the
// dividends where an error would show first (0, around multiples of d, the top of the range) and
// random ones; then large divisors (powers of two and their neighbours up to 2^31 - 1).
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/fast_divmod.h"

namespace {

constexpr int32_t kMax = 2147483647;  // 2^31 - 1, the largest dividend allowed

// The number of (d, n) pairs where div/divmod disagree with the operators; the first one in `first`.
int64_t mismatches(const seg::FastDivmod& f, const std::vector<int32_t>& ns, std::string& first) {
  int64_t bad = 0;
  for (const int32_t n : ns) {
    int32_t q = -1, r = -1;
    f.divmod(n, q, r);
    if (q != n / f.d || r != n % f.d || f.div(n) != n / f.d) {
      if (!bad) first = "d=" + std::to_string(f.d) + " n=" + std::to_string(n) + ": q=" + std::to_string(q) + " r=" +
                        std::to_string(r);
      ++bad;
    }
  }
  return bad;
}

std::vector<int32_t> dividends(int32_t d, std::mt19937& rng) {
  std::vector<int32_t> ns;
  for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{d} - 1, int64_t{d}, int64_t{d} + 1, int64_t{kMax},
                          int64_t{kMax} - 1, int64_t{kMax} - d})
    if (n >= 0 && n <= kMax) ns.push_back(static_cast<int32_t>(n));
  const int64_t top = kMax / d;  // the largest quotient
  for (const int64_t q : {int64_t{1}, int64_t{2}, int64_t{1000}, top - 1, top})
    for (const int64_t delta : {int64_t{-1}, int64_t{0}, int64_t{1}}) {
      const int64_t n = q * d + delta;
      if (n >= 0 && n <= kMax) ns.push_back(static_cast<int32_t>(n));
    }
  std::uniform_int_distribution<int32_t> any(0, kMax);
  for (int i = 0; i < 64; ++i) ns.push_back(any(rng));
  return ns;
}

}  // namespace

TEST_CASE("FastDivmod equals / and % for every divisor up to 4096") {
  std::mt19937 rng(7);
  int64_t bad = 0;
  std::string first;
  for (int32_t d = 1; d <= 4096; ++d) bad += mismatches(seg::FastDivmod(d), dividends(d, rng), first);
  CHECK_MESSAGE(bad == 0, bad << " mismatches, first " << first);
}

TEST_CASE("FastDivmod equals / and % for large divisors") {
  std::mt19937 rng(8);
  int64_t bad = 0;
  std::string first;
  for (int e = 12; e <= 30; ++e)
    for (const int64_t delta : {-1, 0, 1}) {
      const int64_t d = (int64_t{1} << e) + delta;
      bad += mismatches(seg::FastDivmod(static_cast<int32_t>(d)), dividends(static_cast<int32_t>(d), rng), first);
    }
  for (const int32_t d : {kMax, kMax - 1, 3 * 7 * 11 * 13 * 17 * 19, 512 * 512 * 8})
    bad += mismatches(seg::FastDivmod(d), dividends(d, rng), first);
  CHECK_MESSAGE(bad == 0, bad << " mismatches, first " << first);
}

TEST_CASE("FastDivmod rejects a divisor below 1") {
  CHECK_THROWS_AS(seg::FastDivmod(0), std::invalid_argument);
  CHECK_THROWS_AS(seg::FastDivmod(-3), std::invalid_argument);
}
