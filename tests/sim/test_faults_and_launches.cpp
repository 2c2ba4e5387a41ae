// Faults found by the simulator reach the caller as seg::sim::KernelFault with a report, the
// process carries on, and the next launch works. Launch configurations are checked like the CUDA
// runtime does. Also the two SEG_LAUNCH forms that macros get wrong: no kernel arguments, and a
// template kernel with several template arguments.
#include <cmath>
#include <numeric>
#include <string>

#include "tests/sim/broken_kernels.h"
#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using simtest::DeviceBuffer;

namespace {

// Runs `launch`, requires a KernelFault, returns it.
template <class F>
seg::sim::KernelFault expect_fault(F launch) {
  try {
    launch();
  } catch (const seg::sim::KernelFault& f) {
    return f;
  }
  FAIL("the launch did not fault");
  return seg::sim::KernelFault(seg::sim::FaultKind::trap, "");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A good launch, checked element by element (proves the simulator is usable after a fault).
void check_good_launch() {
  const int n = 1000;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = 0.01f * static_cast<float>(i);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i)
    want[i] = x[i] / 2.0 + std::exp(-double(x[i]) * x[i]) / std::sqrt(1.0 + double(x[i]) * x[i]);
  DeviceBuffer<float> dx(x), dy(n);
  simtest::scale_exp(dx.get(), dy.get(), n, 2.0f, 4, 64);
  SEG_CHECK_CLOSE(dy.download(), want, seg::test::Tolerance{1e-6, 1e-5});
}

}  // namespace

TEST_CASE("sim: a deadlock report says what every thread waits for, and the simulator stays usable") {
  DeviceBuffer<float> x(std::vector<float>(64, 1.0f)), y(64);
  for (const int workers : {1, 2}) {
    CAPTURE(workers);
    seg::sim::ScopedOptions scoped(simtest::with_schedule(seg::sim::Schedule::round_robin, 1, workers));
    const seg::sim::KernelFault f =
        expect_fault([&] { simtest::broken::divergent_shuffle_then_barrier(x.get(), y.get()); });
    const std::string report = f.what();
    INFO(report);
    CHECK(f.kind() == seg::sim::FaultKind::deadlock);
    CHECK(contains(report, "deadlock: no thread of block (0,0,0) can continue; 64 of 64 threads are waiting"));
    CHECK(contains(
        report, "kernel divergent_shuffle_then_barrier_kernel <<<grid (1,1,1), block (64,1,1), 0 B dynamic shared>>>"));
    CHECK(contains(
        report,
        "threads 0-15 (warp 0, lanes 0-15) wait in __shfl_xor_sync (mask 0xffffffff) at tests/sim/broken_warp.cu:"));
    CHECK(contains(report, "lanes 16-31 of warp 0 never arrived"));
    CHECK(contains(report, "threads 16-31 (warp 0, lanes 16-31) wait in __syncthreads() at tests/sim/broken_warp.cu:"));
    check_good_launch();
  }
}

TEST_CASE("sim: faults name the kernel, block, thread and source line") {
  DeviceBuffer<float> y(32);
  const seg::sim::KernelFault trap = expect_fault([&] { simtest::broken::trap(y.get()); });
  CHECK(trap.kind() == seg::sim::FaultKind::trap);
  CHECK(contains(trap.what(), "__trap() called"));
  CHECK(contains(trap.what(), "at tests/sim/broken_memory.cu:"));
  CHECK(contains(trap.what(), "block (0,0,0), thread (3,0,0) (warp 0, lane 3)"));

  DeviceBuffer<float> x(std::vector<float>(64, 1.0f)), out(64);
  const seg::sim::KernelFault partial =
      expect_fault([&] { simtest::broken::partial_warp_reduction(x.get(), out.get()); });
  CHECK(partial.kind() == seg::sim::FaultKind::inactive_lanes);
  CHECK(contains(partial.what(), "lane 0 of warp 1 reads lane 16, which does not exist"));
  check_good_launch();
}

TEST_CASE("sim: without strict mode, reads from missing lanes are poisoned and counted") {
  seg::sim::Options o;
  o.strict = false;
  seg::sim::ScopedOptions scoped(o);
  std::vector<float> x(48, 1.0f);
  DeviceBuffer<float> dx(x), y(48);
  simtest::broken::partial_warp_reduction(dx.get(), y.get());
  const auto got = y.download();
  CHECK(got[0] == 32.0f);      // warp 0 is whole
  CHECK(std::isnan(got[32]));  // warp 1 read lanes 16-31, which do not exist
  CHECK(seg::sim::last_launch_stats().inactive_lane_reads > 0);
}

TEST_CASE("sim: launch statistics") {
  const int threads = 100;
  DeviceBuffer<int> out(3 * threads);
  simtest::syncthreads_probe(out.get(), threads);
  const seg::sim::LaunchStats s = seg::sim::last_launch_stats();
  CHECK(s.blocks == 1);
  CHECK(s.threads == threads);
  CHECK(s.barriers == 3);
  CHECK(s.warp_collectives == 0);
  CHECK(s.context_switches >= 4 * threads);  // each thread runs once per phase
}

TEST_CASE("sim: launch configurations over the device limits are refused") {
  DeviceBuffer<float> x(64), y(64);
  struct Bad {
    dim3 grid, block;
    const char* why;
  };
  const Bad bad[] = {
      {dim3(1), dim3(1025), "has 1025 threads"},   {dim3(1), dim3(1024, 2), "has 2048 threads"},
      {dim3(1), dim3(1, 1, 65), "has 65 threads"}, {dim3(1, 65536), dim3(32), "exceeds the limits"},
      {dim3(0), dim3(32), "has a zero dimension"}, {dim3(1), dim3(0), "has a zero dimension"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.why);
    const seg::sim::KernelFault f =
        expect_fault([&] { simtest::scale_exp_config(x.get(), y.get(), 64, b.grid, b.block); });
    CHECK(f.kind() == seg::sim::FaultKind::launch_config);
    CHECK(contains(f.what(), "cudaErrorInvalidConfiguration"));
    CHECK(contains(f.what(), b.why));
  }
}

TEST_CASE("sim: dynamic shared memory above 48 KiB needs cudaFuncSetAttribute") {
  const int threads = 128;
  DeviceBuffer<float> y(threads);
  const int floats = 16384;  // 64 KiB
  const seg::sim::KernelFault f = expect_fault([&] { simtest::smem_roundtrip(y.get(), threads, floats, false); });
  CHECK(f.kind() == seg::sim::FaultKind::launch_config);
  CHECK(contains(f.what(), "cudaErrorInvalidValue"));
  CHECK(contains(f.what(), "cudaFuncSetAttribute"));

  REQUIRE(simtest::smem_roundtrip(y.get(), threads, floats, true) == cudaSuccess);
  std::vector<float> want;
  for (int t = 0; t < threads; ++t) want.push_back(static_cast<float>(floats - 1 - t));
  SEG_CHECK_CLOSE(y.download(), want, seg::test::Tolerance{});

  // Above sm_90's 227 KiB even the attribute is refused.
  CHECK(simtest::smem_roundtrip(y.get(), threads, 60000, true) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
}

TEST_CASE("sim: SEG_LAUNCH without kernel arguments, and with a parenthesised template kernel") {
  CHECK(simtest::count_launches(3) == 3);
  std::vector<float> v(100);
  std::iota(v.begin(), v.end(), 0.0f);
  DeviceBuffer<float> d(v);
  simtest::scale_by_three(d.get(), 100);
  std::vector<float> want;
  for (int i = 0; i < 100; ++i) want.push_back(3.0f * static_cast<float>(i));
  SEG_CHECK_CLOSE(d.download(), want, seg::test::Tolerance{});
}

TEST_CASE("sim: bad environment settings are reported") {
  // Options are read from the environment once; a child process sees a bad value.
  const simtest::ChildResult r =
      simtest::run_child("child: run bug", {"SEG_SIM_TEST_BUG=trap", "SEG_SIM_SCHEDULE=fastest"});
  INFO(r.output);
  CHECK(contains(r.output, "SEG_SIM_SCHEDULE='fastest' is not valid; expected rr, reverse or random"));
  CHECK(r.exit_code != 0);
}
