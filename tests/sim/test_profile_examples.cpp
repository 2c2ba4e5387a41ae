// The profiles quoted in docs/cuda-simulator.md ("Counters"): kernels large enough that the H200
// estimate is not just the launch latency. Not part of the normal run (a few seconds):
//   build/bin/test_sim --no-skip -tc="sim: profile examples"
// Prints the SEG_SIM_PROFILE table of each launch. Default build only (counters).
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>

#include "kernels/sim/counters.h"
#include "tests/sim/broken_kernels.h"
#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using simtest::DeviceBuffer;

TEST_CASE("sim: profile examples" * doctest::skip()) {
  REQUIRE(seg::sim::counters_available());
  seg::sim::Options o;
  o.counters = true;
  seg::sim::ScopedOptions scoped(o);
  auto show = [] { std::printf("%s\n", seg::sim::format_counters(seg::sim::last_launch_counters()).c_str()); };

  const int rows = 2048, cols = 2048;
  std::vector<float> m(static_cast<size_t>(rows) * cols);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i % 977);
  DeviceBuffer<float> in(m), out(m.size()), sums(rows);
  simtest::broken::transpose_bank_conflicts(in.get(), out.get(), rows, cols);
  show();
  simtest::transpose_padded(in.get(), out.get(), rows, cols);
  show();
  simtest::copy_floats(in.get(), out.get(), rows * cols, 256);
  show();
  simtest::broken::row_sums_uncoalesced(in.get(), sums.get(), rows, cols);
  show();

  const int n = 512;
  std::vector<__half> a(static_cast<size_t>(n) * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = __float2half(std::cos(0.01f * static_cast<float>(i)));
  DeviceBuffer<__half> da(a), db(a);
  DeviceBuffer<float> dc(a.size());
  simtest::wmma_gemm(da.get(), db.get(), dc.get(), n, n, n, 1.0f);
  show();
  simtest::ptx_gemm(da.get(), db.get(), dc.get(), n, n, n);
  show();
}
