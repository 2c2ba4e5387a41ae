// Element-wise kernels and the scheduler's thread order, under every simulator configuration.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using simtest::DeviceBuffer;

TEST_CASE("sim: grid-stride element-wise kernel matches the CPU for every element") {
  const int n = 10007;  // not a multiple of any block size
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = std::sin(0.37f * i) * 3.0f;
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = x[i] / 1.5 + std::exp(-double(x[i]) * x[i]) / std::sqrt(1.0 + double(x[i]) * x[i]);
  DeviceBuffer<float> dx(x), dy(n);
  for (const auto& config : simtest::all_configs()) {
    CAPTURE(config.name);
    seg::sim::ScopedOptions scoped(config.options);
    dy.fill_bytes(0);
    simtest::scale_exp(dx.get(), dy.get(), n, 1.5f, 7, 96);
    SEG_CHECK_CLOSE(dy.download(), want, seg::test::Tolerance{1e-6, 1e-5});
  }
}

TEST_CASE("sim: float to half conversion is bit-exact with CUDA's host conversion") {
  const int n = 4099;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = (i - 2000) * 37.123f + 1e-3f * i;
  DeviceBuffer<float> dx(x);
  DeviceBuffer<__half> dy(n);
  simtest::float_to_half(dx.get(), dy.get(), n, 3, 128);
  const std::vector<__half> y = dy.download();
  std::vector<uint16_t> got, want;  // bit patterns
  for (int i = 0; i < n; ++i) {
    got.push_back(__half_as_ushort(y[i]));
    want.push_back(__half_as_ushort(__float2half_rn(x[i])));
  }
  SEG_CHECK_CLOSE(got, want, seg::test::Tolerance{});
}

TEST_CASE("sim: 2-D grid and block indices cover a ragged matrix") {
  const int rows = 37, cols = 53;
  std::vector<float> in(rows * cols);
  std::iota(in.begin(), in.end(), 0.0f);
  DeviceBuffer<float> din(in), dout(rows * cols);
  dout.fill_bytes(0xFF);
  simtest::transpose(din.get(), dout.get(), rows, cols);
  std::vector<float> want(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) want[c * rows + r] = in[r * cols + c];
  SEG_CHECK_CLOSE(dout.download(), want, seg::test::Tolerance{});  // a copy: exact
}

TEST_CASE("sim: schedules decide the order in which threads run") {
  using seg::sim::Schedule;
  const int threads = 64;
  DeviceBuffer<int> before(threads), after(threads), counters(2);
  auto run = [&](const seg::sim::Options& o) {
    seg::sim::ScopedOptions scoped(o);
    counters.fill_bytes(0);
    simtest::run_order(before.get(), after.get(), counters.get(), threads);
    return std::make_pair(before.download(), after.download());
  };
  std::vector<int> ascending(threads), descending(threads);
  std::iota(ascending.begin(), ascending.end(), 0);
  std::reverse_copy(ascending.begin(), ascending.end(), descending.begin());

  SUBCASE("round-robin runs threads in index order, also after a barrier") {
    const auto [b, a] = run(simtest::with_schedule(Schedule::round_robin));
    CHECK(b == ascending);
    CHECK(a == ascending);
  }
  SUBCASE("reverse runs the highest index first") {
    const auto [b, a] = run(simtest::with_schedule(Schedule::reverse));
    CHECK(b == descending);
    CHECK(a == descending);
  }
  SUBCASE("random is a permutation, reproducible from its seed") {
    const auto [b1, a1] = run(simtest::with_schedule(Schedule::random, 7));
    const auto [b2, a2] = run(simtest::with_schedule(Schedule::random, 7));
    const auto [b3, a3] = run(simtest::with_schedule(Schedule::random, 8));
    CHECK(b1 == b2);
    CHECK(a1 == a2);
    CHECK(b1 != b3);
    CHECK(b1 != ascending);
    std::vector<int> sorted = b1;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == ascending);
  }
}
