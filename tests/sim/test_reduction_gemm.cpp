// The block reduction and the WMMA GEMM under every simulator configuration, every output element
// compared with a double-precision CPU reference.
#include <cuda_fp16.h>

#include <cmath>

#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using simtest::DeviceBuffer;

TEST_CASE("sim: block reduction with shuffles, ballots, shared memory and atomics") {
  struct Case {
    int n, blocks, threads;
  };
  const Case cases[] = {{30000, 1, 256}, {30000, 8, 256}, {777, 3, 96}, {5000, 2, 1024}};
  for (const Case& c : cases) {
    CAPTURE(c.n);
    CAPTURE(c.blocks);
    CAPTURE(c.threads);
    std::vector<float> x(c.n);
    double want_sum = 0;
    int want_pos = 0;
    for (int i = 0; i < c.n; ++i) {
      x[i] = std::sin(0.013f * i) + 0.1f;
      want_sum += x[i];
      want_pos += x[i] > 0.0f;
    }
    DeviceBuffer<float> dx(x), sum(1);
    DeviceBuffer<int> pos(1);
    for (const auto& config : simtest::all_configs()) {
      CAPTURE(config.name);
      seg::sim::ScopedOptions scoped(config.options);
      sum.fill_bytes(0);
      pos.fill_bytes(0);
      simtest::block_reduce(dx.get(), c.n, sum.get(), pos.get(), c.blocks, c.threads);
      SEG_CHECK_CLOSE(sum.download()[0], want_sum, seg::test::Tolerance{0, 1e-5});  // f32 tree vs serial sum
      CHECK(pos.download()[0] == want_pos);
    }
  }
}

namespace {

// C = alpha * A * B in double on the half-rounded inputs.
std::vector<double> reference_gemm(const std::vector<__half>& a, const std::vector<__half>& b, int m, int n, int k,
                                   double alpha) {
  std::vector<double> c(static_cast<size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int kk = 0; kk < k; ++kk) {
      const double av = __half2float(a[i * k + kk]);
      for (int j = 0; j < n; ++j) c[i * n + j] += av * __half2float(b[kk * n + j]);
    }
  for (double& v : c) v *= alpha;
  return c;
}

void check_gemm(int m, int n, int k, const std::vector<simtest::Config>& configs) {
  std::vector<__half> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = __float2half(std::sin(0.7f * i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = __float2half(std::cos(0.3f * i));
  const std::vector<double> want = reference_gemm(a, b, m, n, k, 0.5);
  DeviceBuffer<__half> da(a), db(b);
  DeviceBuffer<float> dc(static_cast<size_t>(m) * n);
  for (const auto& config : configs) {
    CAPTURE(config.name);
    seg::sim::ScopedOptions scoped(config.options);
    dc.fill_bytes(0xFF);
    simtest::wmma_gemm(da.get(), db.get(), dc.get(), m, n, k, 0.5f);
    // float accumulation in a different order than the reference: relative 1e-5 of the terms' scale.
    SEG_CHECK_CLOSE(dc.download(), want, seg::test::Tolerance{2e-5 * k, 1e-5});
  }
}

}  // namespace

TEST_CASE("sim: WMMA GEMM, tile-aligned and ragged sizes") {
  check_gemm(64, 64, 32, simtest::all_configs());
  check_gemm(77, 45, 50, simtest::all_configs());
  check_gemm(128, 192, 96, {simtest::all_configs()[0], simtest::all_configs()[4]});
}
