// Timings of the simulator for docs/cuda-simulator.md. Not part of the normal run:
//   build/bin/test_sim --no-skip -tc="sim: timings"
// Each line is one launch (the first launch of a configuration is run once before, to exclude
// creating the fibers).
#include <cuda_fp16.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>

#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using simtest::DeviceBuffer;

namespace {

// Launches are queued: each measurement waits for the launch to run.
double seconds(const std::function<void()>& f) {
  f();  // warm-up: fibers, pages
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  f();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

seg::sim::Options config(bool ucontext, int workers, bool counters = false, bool checks = true) {
  seg::sim::Options o;
  o.use_ucontext = ucontext;
  o.workers = workers;
  o.counters = counters;
  o.check_pointers = checks;
  return o;
}

}  // namespace

TEST_CASE("sim: timings" * doctest::skip()) {
  std::printf(
      "| launch | switch | workers | seconds | context switches | ns per switch |\n|---|---|---|---|---|---|\n");
  auto row = [](const char* what, const seg::sim::Options& o, const std::function<void()>& f) {
    seg::sim::ScopedOptions scoped(o);
    const double s = seconds(f);
    const auto stats = seg::sim::last_launch_stats();
    std::printf("| %s | %s | %d | %.3f | %llu | %.0f |\n", what, o.use_ucontext ? "ucontext" : "asm", o.workers, s,
                static_cast<unsigned long long>(stats.context_switches),
                1e9 * s / static_cast<double>(stats.context_switches));
    std::fflush(stdout);
  };

  const int n = 1 << 20;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = std::sin(0.001f * static_cast<float>(i));
  DeviceBuffer<float> dx(x), dy(n), sum(1);
  DeviceBuffer<int> pos(1);
  for (const bool uc : {false, true}) {
    row("element-wise, 1M floats, grid 256 x 256", config(uc, 1),
        [&] { simtest::scale_exp(dx.get(), dy.get(), n, 2.0f, 256, 256); });
    row("reduction, 1M floats, grid 1 x 256", config(uc, 1),
        [&] { simtest::block_reduce(dx.get(), n, sum.get(), pos.get(), 1, 256); });
    row("reduction, 1M floats, grid 64 x 256", config(uc, 1),
        [&] { simtest::block_reduce(dx.get(), n, sum.get(), pos.get(), 64, 256); });
  }
  row("reduction, 1M floats, grid 4096 x 256", config(false, 1),
      [&] { simtest::block_reduce(dx.get(), n, sum.get(), pos.get(), 4096, 256); });
  row("reduction, 1M floats, grid 4096 x 256", config(false, 2),
      [&] { simtest::block_reduce(dx.get(), n, sum.get(), pos.get(), 4096, 256); });
  // The pointer checks' and the counters' cost (default build; elsewhere neither exists and these
  // rows repeat the ones above).
  row("element-wise, 1M floats, grid 256 x 256, checks off", config(false, 1, false, false),
      [&] { simtest::scale_exp(dx.get(), dy.get(), n, 2.0f, 256, 256); });
  row("reduction, 1M floats, grid 4096 x 256, checks off", config(false, 1, false, false),
      [&] { simtest::block_reduce(dx.get(), n, sum.get(), pos.get(), 4096, 256); });
  row("element-wise, 1M floats, grid 256 x 256, counters", config(false, 1, true),
      [&] { simtest::scale_exp(dx.get(), dy.get(), n, 2.0f, 256, 256); });
  row("reduction, 1M floats, grid 4096 x 256, counters", config(false, 1, true),
      [&] { simtest::block_reduce(dx.get(), n, sum.get(), pos.get(), 4096, 256); });

  for (const int size : {128, 256, 512}) {
    std::vector<__half> a(static_cast<size_t>(size) * size);
    for (size_t i = 0; i < a.size(); ++i) a[i] = __float2half(std::cos(0.01f * static_cast<float>(i)));
    DeviceBuffer<__half> da(a), db(a);
    DeviceBuffer<float> dc(a.size());
    const std::string wmma = "WMMA GEMM " + std::to_string(size) + "^3";
    const std::string ptx = "cp.async+ldmatrix+mma.sync GEMM " + std::to_string(size) + "^3";
    row(wmma.c_str(), config(false, 1),
        [&] { simtest::wmma_gemm(da.get(), db.get(), dc.get(), size, size, size, 1.0f); });
    row(ptx.c_str(), config(false, 1), [&] { simtest::ptx_gemm(da.get(), db.get(), dc.get(), size, size, size); });
    if (size == 512) {
      row(wmma.c_str(), config(false, 2),
          [&] { simtest::wmma_gemm(da.get(), db.get(), dc.get(), size, size, size, 1.0f); });
      row(wmma.c_str(), config(true, 1),
          [&] { simtest::wmma_gemm(da.get(), db.get(), dc.get(), size, size, size, 1.0f); });
      row((wmma + ", checks off").c_str(), config(false, 1, false, false),
          [&] { simtest::wmma_gemm(da.get(), db.get(), dc.get(), size, size, size, 1.0f); });
      row((wmma + ", counters").c_str(), config(false, 1, true),
          [&] { simtest::wmma_gemm(da.get(), db.get(), dc.get(), size, size, size, 1.0f); });
    }
  }
}
