// Every WMMA shape, element type, memory layout and accumulator type the simulator supports,
// against a double-precision reference for every element of the tile.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using simtest::DeviceBuffer;

namespace {

// (row, col) of an R x C matrix stored row- or column-major.
size_t at(int r, int c, int rows, int cols, bool col_major) {
  return col_major ? static_cast<size_t>(c) * rows + r : static_cast<size_t>(r) * cols + c;
}

// D = A * B + C in double, from element accessors.
template <class A, class B, class C>
std::vector<double> reference(int m, int n, int k, A a, B b, C c) {
  std::vector<double> d(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = c(i, j);
      for (int kk = 0; kk < k; ++kk) s += a(i, kk) * b(kk, j);
      d[static_cast<size_t>(i) * n + j] = s;
    }
  return d;
}

float tf32_truncate(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u &= 0xFFFFE000u;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace

TEST_CASE("sim: WMMA m16n16k16 __half with column-major A, B, C and D") {
  std::vector<__half> a(256), b(256);
  std::vector<float> c(256);
  for (int i = 0; i < 256; ++i) {
    a[i] = __float2half(std::sin(0.3f * i));
    b[i] = __float2half(std::cos(0.7f * i));
    c[i] = 0.01f * static_cast<float>(i);
  }
  const auto want = reference(
      16, 16, 16, [&](int r, int k) { return double(__half2float(a[at(r, k, 16, 16, true)])); },
      [&](int k, int col) { return double(__half2float(b[at(k, col, 16, 16, true)])); },
      [&](int r, int col) { return double(c[at(r, col, 16, 16, true)]); });
  DeviceBuffer<__half> da(a), db(b);
  DeviceBuffer<float> dc(c), dd(256);
  simtest::wmma_half_col_major(da.get(), db.get(), dc.get(), dd.get());
  const auto got = dd.download();
  std::vector<float> row_major(256);
  for (int r = 0; r < 16; ++r)
    for (int col = 0; col < 16; ++col) row_major[r * 16 + col] = got[at(r, col, 16, 16, true)];
  SEG_CHECK_CLOSE(row_major, want, seg::test::Tolerance{1e-5, 1e-5});
}

TEST_CASE("sim: WMMA m32n8k16 __nv_bfloat16") {
  std::vector<__nv_bfloat16> a(32 * 16), b(16 * 8);
  std::vector<float> c(32 * 8);
  for (size_t i = 0; i < a.size(); ++i) a[i] = __float2bfloat16(std::sin(0.11f * static_cast<float>(i)));
  for (size_t i = 0; i < b.size(); ++i) b[i] = __float2bfloat16(std::cos(0.23f * static_cast<float>(i)));
  for (size_t i = 0; i < c.size(); ++i) c[i] = -0.5f + 0.01f * static_cast<float>(i);
  const auto want = reference(
      32, 8, 16, [&](int r, int k) { return double(__bfloat162float(a[r * 16 + k])); },
      [&](int k, int col) { return double(__bfloat162float(b[k * 8 + col])); }, [&](int r, int col) { return double(c[r * 8 + col]); });
  DeviceBuffer<__nv_bfloat16> da(a), db(b);
  DeviceBuffer<float> dc(c), dd(c.size());
  simtest::wmma_bf16_m32n8k16(da.get(), db.get(), dc.get(), dd.get());
  SEG_CHECK_CLOSE(dd.download(), want, seg::test::Tolerance{1e-5, 1e-5});
}

TEST_CASE("sim: WMMA m8n32k16 __half with a __half accumulator") {
  std::vector<__half> a(8 * 16), b(16 * 32), c(8 * 32);
  for (size_t i = 0; i < a.size(); ++i) a[i] = __float2half(0.125f * static_cast<float>(i % 7) - 0.25f);
  for (size_t i = 0; i < b.size(); ++i) b[i] = __float2half(0.25f * static_cast<float>(i % 5));
  for (size_t i = 0; i < c.size(); ++i) c[i] = __float2half(0.5f * static_cast<float>(i % 3));
  const auto want = reference(
      8, 32, 16, [&](int r, int k) { return double(__half2float(a[r * 16 + k])); },
      [&](int k, int col) { return double(__half2float(b[at(k, col, 16, 32, true)])); },
      [&](int r, int col) { return double(__half2float(c[r * 32 + col])); });
  DeviceBuffer<__half> da(a), db(b), dc(c), dd(c.size());
  simtest::wmma_half_m8n32k16(da.get(), db.get(), dc.get(), dd.get());
  std::vector<float> got;
  for (const __half h : dd.download()) got.push_back(__half2float(h));
  // The sums are small multiples of 1/32: exact in float and in half.
  SEG_CHECK_CLOSE(got, want, seg::test::Tolerance{0.0, 0.0});
}

TEST_CASE("sim: WMMA m16n16k8 tf32 uses 10-bit mantissas") {
  std::vector<float> a(16 * 8), b(8 * 16), c(256);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 1.0f + std::ldexp(1.0f, -12) + 0.001f * static_cast<float>(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.9f * static_cast<float>(i));
  for (size_t i = 0; i < c.size(); ++i) c[i] = 0.001f * static_cast<float>(i);
  // wmma::__float_to_tf32 rounds to nearest (ties away from zero); the reference does the same.
  auto to_tf32 = [](float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u = (u + 0x1000u) & 0xFFFFE000u;
    std::memcpy(&x, &u, 4);
    return x;
  };
  const auto want = reference(
      16, 16, 8, [&](int r, int k) { return double(tf32_truncate(to_tf32(a[r * 8 + k]))); },
      [&](int k, int col) { return double(tf32_truncate(to_tf32(b[k * 16 + col]))); },
      [&](int r, int col) { return double(c[r * 16 + col]); });
  DeviceBuffer<float> da(a), db(b), dc(c), dd(256);
  simtest::wmma_tf32(da.get(), db.get(), dc.get(), dd.get());
  SEG_CHECK_CLOSE(dd.download(), want, seg::test::Tolerance{1e-5, 1e-5});
  // The same product without rounding to tf32 differs: the 2^-12 in A is below tf32's precision.
  const auto exact = reference(
      16, 16, 8, [&](int r, int k) { return double(a[r * 8 + k]); }, [&](int k, int col) { return double(b[k * 16 + col]); },
      [&](int r, int col) { return double(c[r * 16 + col]); });
  CHECK_FALSE(seg::test::compare(dd.download(), exact, seg::test::Tolerance{1e-7, 1e-7}).ok());
}
