// The PTX helpers (kernels/cuda/ptx.h) in the simulator: every lane's registers against the
// layouts of the PTX ISA, written out here independently of the emulation, then a GEMM built
// from cp.async, ldmatrix and mma.sync against a CPU reference.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>

#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using simtest::DeviceBuffer;

TEST_CASE("sim: ldmatrix x1/x2/x4, plain and transposed, delivers the PTX ISA layout") {
  std::vector<uint16_t> src(32 * 8);
  for (int i = 0; i < 32 * 8; ++i) src[i] = static_cast<uint16_t>(0x1000 + i);  // row i/8, column i%8
  std::vector<int> perm(32);
  for (int l = 0; l < 32; ++l) perm[l] = (l * 13 + 5) % 32;  // lanes address rows in a scrambled order
  DeviceBuffer<uint16_t> dsrc(src);
  DeviceBuffer<int> dperm(perm);
  DeviceBuffer<uint32_t> out(4 * 32);
  for (const int matrices : {1, 2, 4})
    for (const bool transpose : {false, true}) {
      CAPTURE(matrices);
      CAPTURE(transpose);
      simtest::ldmatrix_probe(dsrc.get(), dperm.get(), out.get(), matrices, transpose);
      const auto got = out.download();
      // Matrix m, row r is the shared-memory row addressed by lane 8m + r.
      auto element = [&](int m, int r, int c) { return src[perm[8 * m + r] * 8 + c]; };
      size_t bad = 0;
      for (int l = 0; l < 32; ++l)
        for (int m = 0; m < matrices; ++m) {
          uint16_t lo, hi;
          if (!transpose) {
            lo = element(m, l / 4, 2 * (l % 4));
            hi = element(m, l / 4, 2 * (l % 4) + 1);
          } else {
            lo = element(m, 2 * (l % 4), l / 4);
            hi = element(m, 2 * (l % 4) + 1, l / 4);
          }
          bad += got[4 * l + m] != (static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16));
        }
      CHECK(bad == 0);
    }
}

TEST_CASE("sim: mma.sync m16n8k16 (f16 and bf16) computes D = A*B + C for every element") {
  for (const bool bf16 : {false, true}) {
    CAPTURE(bf16);
    std::vector<uint16_t> a(16 * 16), b(16 * 8);
    std::vector<float> av(a.size()), bv(b.size()), c(16 * 8);
    auto to_bits = [&](float x, float* rounded) {
      if (bf16) {
        const __nv_bfloat16 h = __float2bfloat16(x);
        *rounded = __bfloat162float(h);
        return __bfloat16_as_ushort(h);
      }
      const __half h = __float2half(x);
      *rounded = __half2float(h);
      return __half_as_ushort(h);
    };
    for (size_t i = 0; i < a.size(); ++i) a[i] = to_bits(std::sin(0.9f * i), &av[i]);
    for (size_t i = 0; i < b.size(); ++i) b[i] = to_bits(std::cos(1.3f * i), &bv[i]);
    for (size_t i = 0; i < c.size(); ++i) c[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
    std::vector<double> want(16 * 8);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        double s = c[i * 8 + j];
        for (int k = 0; k < 16; ++k) s += double(av[i * 16 + k]) * bv[k * 8 + j];
        want[i * 8 + j] = s;
      }
    DeviceBuffer<uint16_t> da(a), db(b);
    DeviceBuffer<float> dc(c), dd(16 * 8);
    simtest::mma_probe(da.get(), db.get(), dc.get(), dd.get(), bf16);
    SEG_CHECK_CLOSE(dd.download(), want, seg::test::Tolerance{1e-5, 1e-6});
  }
}

TEST_CASE("sim: mma.sync m16n8k8 TF32 computes D = A*B + C on the operands' top 19 bits") {
  std::vector<float> a(16 * 8), b(8 * 8), c(16 * 8);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.7f * static_cast<float>(i)) * 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(1.1f * static_cast<float>(i));
  for (size_t i = 0; i < c.size(); ++i) c[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  // The hardware ignores each operand's low 13 bits: the reference truncates them, so an
  // emulation that used the whole float (or rounded) would differ by far more than f32 rounding.
  auto tf32 = [](float x) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u &= 0xFFFFE000u;
    std::memcpy(&x, &u, 4);
    return static_cast<double>(x);
  };
  std::vector<double> want(16 * 8);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double s = c[i * 8 + j];
      for (int k = 0; k < 8; ++k) s += tf32(a[i * 8 + k]) * tf32(b[k * 8 + j]);
      want[i * 8 + j] = s;
    }
  DeviceBuffer<float> da(a), db(b), dc(c), dd(16 * 8);
  simtest::mma_tf32_probe(da.get(), db.get(), dc.get(), dd.get());
  SEG_CHECK_CLOSE(dd.download(), want, seg::test::Tolerance{1e-5, 1e-6});
}

TEST_CASE("sim: cp.async lands at wait_group, zero-fills past src-size") {
  const std::vector<float> src = {1, 2, 3, 4, 5, 6, 7, 8};
  DeviceBuffer<float> dsrc(src), out(20);
  uint32_t poison_bits = 0xFFFFFFFFu;
  float poison;
  std::memcpy(&poison, &poison_bits, 4);
  for (const int src_bytes : {16, 8, 0}) {
    CAPTURE(src_bytes);
    simtest::cp_async_probe(dsrc.get(), out.get(), src_bytes);
    const auto o = out.download();
    auto bits = [](float f) {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u;
    };
    for (int i = 0; i < 4; ++i) CHECK(bits(o[i]) == poison_bits);      // nothing landed before a wait
    for (int i = 0; i < 4; ++i) CHECK(o[4 + i] == src[i]);             // wait_group<1>: the older group
    for (int i = 4; i < 8; ++i) CHECK(bits(o[4 + i]) == poison_bits);  // the newer one still in flight
    for (int i = 0; i < 8; ++i) {
      const float want = i < 4 || (i - 4) * 4 < src_bytes ? src[i] : 0.0f;
      CHECK(o[12 + i] == want);
    }
  }
}

TEST_CASE("sim: GEMM with cp.async double buffering, ldmatrix and mma.sync, ragged sizes") {
  struct Size {
    int m, n, k;
  };
  for (const Size s : {Size{32, 32, 16}, Size{50, 56, 40}, Size{96, 64, 72}}) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
    std::vector<__half> a(static_cast<size_t>(s.m) * s.k), b(static_cast<size_t>(s.k) * s.n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = __float2half(std::sin(0.31f * i));
    for (size_t i = 0; i < b.size(); ++i) b[i] = __float2half(std::cos(0.17f * i));
    std::vector<double> want(static_cast<size_t>(s.m) * s.n, 0.0);
    for (int i = 0; i < s.m; ++i)
      for (int kk = 0; kk < s.k; ++kk)
        for (int j = 0; j < s.n; ++j)
          want[i * s.n + j] += double(__half2float(a[i * s.k + kk])) * __half2float(b[kk * s.n + j]);
    DeviceBuffer<__half> da(a), db(b);
    DeviceBuffer<float> dc(want.size());
    for (const auto& config : simtest::all_configs()) {
      CAPTURE(config.name);
      seg::sim::ScopedOptions scoped(config.options);
      dc.fill_bytes(0xFF);
      simtest::ptx_gemm(da.get(), db.get(), dc.get(), s.m, s.n, s.k);
      SEG_CHECK_CLOSE(dc.download(), want, seg::test::Tolerance{2e-5 * s.k, 1e-5});
    }
  }
}
