#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <vector>

#include "core/rng.h"
#include "tests/common/compare.h"
#include "tests/core/cuda_headers_requirement.h"

#ifdef SEG_TEST_HAVE_CUDA_HEADERS
#include <cuda_fp16.h>  // brings CUDA's host qualifiers and vector types
#include <curand_philox4x32_x.h>
#endif

using namespace seg;

TEST_CASE("Philox4x32-10 known-answer vectors (Random123)") {
  auto run = [](PhiloxCounter c, PhiloxKey k) { return philox4x32_10(c, k); };
  PhiloxCounter r = run({{0, 0, 0, 0}}, {{0, 0}});
  CHECK(r.c[0] == 0x6627e8d5u);
  CHECK(r.c[1] == 0xe169c58du);
  CHECK(r.c[2] == 0xbc57ac4cu);
  CHECK(r.c[3] == 0x9b00dbd8u);
  r = run({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, {{0xffffffffu, 0xffffffffu}});
  CHECK(r.c[0] == 0x408f276du);
  CHECK(r.c[1] == 0x41c83b0eu);
  CHECK(r.c[2] == 0xa20bc7c6u);
  CHECK(r.c[3] == 0x6d5451fdu);
  r = run({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, {{0xa4093822u, 0x299f31d0u}});
  CHECK(r.c[0] == 0xd16cfe09u);
  CHECK(r.c[1] == 0x94fdccebu);
  CHECK(r.c[2] == 0x5001e420u);
  CHECK(r.c[3] == 0x24126ea1u);
}

// Skipped, as test_core_cuda_headers, in a build without the CUDA headers.
#ifdef SEG_TEST_HAVE_CUDA_HEADERS
TEST_CASE("Philox matches cuRAND's Philox4_32_10 on many counters and keys" * SEG_REQUIRES(cuda_headers)) {
  PhiloxStream pick(7, RngPurpose::test);
  for (int i = 0; i < 10000; ++i) {
    const PhiloxCounter c{{pick.next_u32(), pick.next_u32(), pick.next_u32(), pick.next_u32()}};
    const PhiloxKey k{{pick.next_u32(), pick.next_u32()}};
    const uint4 ref = curand_Philox4x32_10(uint4{c.c[0], c.c[1], c.c[2], c.c[3]}, uint2{k.k[0], k.k[1]});
    const PhiloxCounter ours = philox4x32_10(c, k);
    REQUIRE(ours.c[0] == ref.x);
    REQUIRE(ours.c[1] == ref.y);
    REQUIRE(ours.c[2] == ref.z);
    REQUIRE(ours.c[3] == ref.w);
  }
}
#endif

TEST_CASE("streams are deterministic and independent per seed, purpose and stream id") {
  auto first = [](uint64_t seed, RngPurpose p, uint64_t stream) {
    PhiloxStream s(seed, p, stream);
    std::vector<uint32_t> v;
    for (int i = 0; i < 8; ++i) v.push_back(s.next_u32());
    return v;
  };
  CHECK(first(304, RngPurpose::dropout, 0) == first(304, RngPurpose::dropout, 0));
  CHECK(first(304, RngPurpose::dropout, 0) != first(305, RngPurpose::dropout, 0));
  CHECK(first(304, RngPurpose::dropout, 0) != first(304, RngPurpose::augment, 0));
  CHECK(first(304, RngPurpose::dropout, 0) != first(304, RngPurpose::dropout, 1));
  std::set<uint64_t> keys;
  for (uint64_t seed = 0; seed < 100; ++seed)
    for (auto p : {RngPurpose::init, RngPurpose::dropout, RngPurpose::augment, RngPurpose::data_order}) {
      const PhiloxKey k = philox_key(seed, p);
      keys.insert((static_cast<uint64_t>(k.k[1]) << 32) | k.k[0]);
    }
  CHECK(keys.size() == 400);
}

TEST_CASE("uniform, normal and below have the right ranges and moments") {
  PhiloxStream s(1, RngPurpose::test);
  const int n = 200000;
  double sum = 0, sum2 = 0, nsum = 0, nsum2 = 0;
  int counts[7] = {};
  for (int i = 0; i < n; ++i) {
    const float u = s.uniform();
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    sum += u;
    sum2 += u * u;
    const float z = s.normal();
    nsum += z;
    nsum2 += z * z;
    const uint32_t b = s.below(7);
    REQUIRE(b < 7);
    ++counts[b];
  }
  // Moments of n = 200000 draws; each bound is 4-8 standard errors.
  using seg::test::Tolerance;
  SEG_CHECK_CLOSE(sum / n, 0.5, Tolerance{0, 0.01});                                 // se 0.13%
  SEG_CHECK_CLOSE(sum2 / n - (sum / n) * (sum / n), 1.0 / 12, Tolerance{0, 0.02});  // se 0.2%
  SEG_CHECK_CLOSE(nsum / n, 0.0, Tolerance{0.01, 0});                               // se 0.0022
  SEG_CHECK_CLOSE(nsum2 / n, 1.0, Tolerance{0, 0.02});                              // se 0.32%
  SEG_CHECK_CLOSE(std::vector<int>(counts, counts + 7), std::vector<double>(7, n / 7.0), Tolerance{0, 0.03});  // se 0.6%
}
