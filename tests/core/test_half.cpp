// f16/bf16 storage types: bit-exact against CUDA's host-side conversions, and every SIMD path of
// the bulk converters against the scalar reference.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/cpu_features.h"

#ifdef SEG_TEST_HAVE_CUDA_HEADERS
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

using namespace seg;

namespace {

// Every float that lies on, or one ulp either side of, a boundary where float->half rounding changes:
// the midpoints between consecutive halves (ties), plus the half values themselves, for all 65536
// half patterns; and the subnormal / overflow / underflow edges.
std::vector<float> rounding_boundary_floats() {
  std::vector<float> out;
  for (uint32_t h = 0; h < 0x7C00u; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float v = f16_bits_to_f32(static_cast<uint16_t>(h | sign));
      const float next = f16_bits_to_f32(static_cast<uint16_t>((h + 1) | sign));  // h+1 = 0x7C00 is inf
      const double mid = (static_cast<double>(v) + static_cast<double>(next)) / 2.0;
      const float midf = static_cast<float>(mid);  // exact: halves have 11 significant bits
      for (float x : {v, midf}) {
        out.push_back(x);
        out.push_back(std::nextafter(x, std::numeric_limits<float>::infinity()));
        out.push_back(std::nextafter(x, -std::numeric_limits<float>::infinity()));
      }
    }
  }
  // Edges: below the smallest subnormal half, around 2^-25 and 2^-24, huge values, specials.
  for (float x : {0x1p-26f, 0x1p-25f, 0x1.8p-25f, 0x1p-24f, 65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e10f,
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min(), 0.0f}) {
    out.push_back(x);
    out.push_back(-x);
  }
  return out;
}

// A dense sample over all float bit patterns (every 997th) plus the boundaries.
std::vector<uint32_t> float_sample_bits() {
  std::vector<uint32_t> out;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 997) out.push_back(static_cast<uint32_t>(u));
  for (float f : rounding_boundary_floats()) out.push_back(float_bits(f));
  for (uint32_t nan : {0x7F800001u, 0x7FC00000u, 0xFFC00000u, 0x7FFFFFFFu, 0xFF800001u}) out.push_back(nan);
  return out;
}

}  // namespace

TEST_CASE("f16 and bf16 are 16-bit storage types with float round trips") {
  CHECK(sizeof(f16) == 2);
  CHECK(sizeof(bf16) == 2);
  CHECK(static_cast<float>(f16(1.0f)) == 1.0f);
  CHECK(f16(1.0f).bits == 0x3C00);
  CHECK(f16(-2.0f).bits == 0xC000);
  CHECK(f16(65504.0f).bits == 0x7BFF);
  CHECK(f16(65520.0f).bits == 0x7C00);       // ties to even: rounds up to inf
  CHECK(f16(0x1p-24f).bits == 0x0001);       // smallest subnormal
  CHECK(f16(0x1p-25f).bits == 0x0000);       // exactly half of it: ties to even -> 0
  CHECK(f16(0x1.8p-25f).bits == 0x0001);     // above the tie
  CHECK(f16(std::nanf("")).bits == 0x7FFF);  // canonical NaN
  CHECK(bf16(1.0f).bits == 0x3F80);
  CHECK(bf16(1.00390625f).bits == 0x3F80);   // 1 + 2^-8 is a tie: even -> 1.0
  CHECK(bf16(1.01171875f).bits == 0x3F82);   // 1 + 3*2^-8 tie: odd -> up
  CHECK(static_cast<float>(bf16::from_bits(0x4049)) == 3.140625f);
}

TEST_CASE("every f16 pattern round-trips through float") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const bool nan = (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
    const float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    if (nan) {
      CHECK(std::isnan(f));
    } else {
      REQUIRE(f32_to_f16_bits(f) == h);
    }
  }
}

#ifdef SEG_TEST_HAVE_CUDA_HEADERS
TEST_CASE("f16 -> float matches CUDA __half2float bit for bit on all 65536 patterns") {
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    __half_raw raw;
    raw.x = static_cast<unsigned short>(h);
    const float cuda = __half2float(__half(raw));
    const float ours = f16_bits_to_f32(static_cast<uint16_t>(h));
    if (float_bits(cuda) != float_bits(ours)) ++mismatches;
  }
  CHECK(mismatches == 0);
}

TEST_CASE("float -> f16 matches CUDA __float2half on a dense sample and every rounding boundary") {
  const std::vector<uint32_t> sample = float_sample_bits();
  CHECK(sample.size() > 4000000);
  int mismatches = 0;
  for (uint32_t u : sample) {
    const float f = bits_float(u);
    const __half_raw cuda = static_cast<__half_raw>(__float2half(f));
    if (cuda.x != f32_to_f16_bits(f)) {
      if (++mismatches < 5) MESSAGE("mismatch for float bits ", u);
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("bf16 conversions match CUDA __float2bfloat16 / __bfloat162float") {
  int mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    __nv_bfloat16_raw raw;
    raw.x = static_cast<unsigned short>(h);
    if (float_bits(__bfloat162float(__nv_bfloat16(raw))) != float_bits(bf16_bits_to_f32(static_cast<uint16_t>(h))))
      ++mismatches;
  }
  for (uint32_t u : float_sample_bits()) {
    const float f = bits_float(u);
    // bf16 ties sit at float bit patterns ending in 0x8000: test those and their neighbours too.
    for (uint32_t v : {u, (u & 0xFFFF0000u) | 0x8000u, (u & 0xFFFF0000u) | 0x7FFFu, (u & 0xFFFF0000u) | 0x8001u}) {
      const float g = bits_float(v);
      const __nv_bfloat16_raw cuda = static_cast<__nv_bfloat16_raw>(__float2bfloat16(g));
      if (cuda.x != f32_to_bf16_bits(g)) ++mismatches;
    }
    (void)f;
  }
  CHECK(mismatches == 0);
}
#else
TEST_CASE("CUDA headers absent: bit-exact comparison with CUDA not run" * doctest::skip()) {}
#endif

TEST_CASE("bulk converters: every ISA path equals the scalar reference (NaN stays NaN)") {
  const std::vector<uint32_t> sample = float_sample_bits();
  std::vector<float> src(sample.size());
  for (size_t i = 0; i < sample.size(); ++i) src[i] = bits_float(sample[i]);
  const int64_t n = static_cast<int64_t>(src.size()) - 3;  // an odd length exercises the scalar tails
  std::vector<f16> ref16(n);
  std::vector<bf16> refb(n);
  for (int64_t i = 0; i < n; ++i) {
    ref16[i] = f16(src[i]);
    refb[i] = bf16(src[i]);
  }
  const CpuIsa saved = cpu_isa();
  for (CpuIsa isa : {CpuIsa::scalar, CpuIsa::avx2, CpuIsa::avx512}) {
    if (isa > cpu_isa_detected()) continue;
    set_cpu_isa(isa);
    CAPTURE(cpu_isa_name(isa));
    std::vector<f16> h(n);
    std::vector<bf16> b(n);
    cpu::convert_f32_to_f16(src.data(), h.data(), n);
    cpu::convert_f32_to_bf16(src.data(), b.data(), n);
    int bad16 = 0, badb = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(src[i])) {
        bad16 += !((h[i].bits & 0x7C00) == 0x7C00 && (h[i].bits & 0x3FF) != 0);
        badb += b[i].bits != 0x7FFF;
      } else {
        bad16 += h[i].bits != ref16[i].bits;
        badb += b[i].bits != refb[i].bits;
      }
    }
    CHECK(bad16 == 0);
    CHECK(badb == 0);
    // Back to float: all 65536 patterns.
    std::vector<f16> all16(65536);
    std::vector<bf16> allb(65536);
    for (uint32_t i = 0; i < 65536; ++i) {
      all16[i] = f16::from_bits(static_cast<uint16_t>(i));
      allb[i] = bf16::from_bits(static_cast<uint16_t>(i));
    }
    std::vector<float> back16(65536), backb(65536);
    cpu::convert_f16_to_f32(all16.data(), back16.data(), 65536);
    cpu::convert_bf16_to_f32(allb.data(), backb.data(), 65536);
    int bad_back = 0;
    for (uint32_t i = 0; i < 65536; ++i) {
      const float r16 = static_cast<float>(all16[i]), rb = static_cast<float>(allb[i]);
      bad_back += std::isnan(r16) ? !std::isnan(back16[i]) : float_bits(back16[i]) != float_bits(r16);
      bad_back += float_bits(backb[i]) != float_bits(rb);
    }
    CHECK(bad_back == 0);
  }
  set_cpu_isa(saved);
}
