#include "tests/sim/bug_catalogue.h"

#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "tests/sim/broken_kernels.h"
#include "tests/sim/sim_test_util.h"

namespace simtest {

namespace {

using namespace simtest::broken;

// Runs a launch; a KernelFault becomes the outcome, otherwise `check` compares the results.
Outcome attempt(const std::function<void()>& launch, const std::function<size_t()>& count_wrong) {
  Outcome o;
  try {
    launch();
  } catch (const seg::sim::KernelFault& f) {
    o.kind = Outcome::Kind::fault;
    o.fault_kind = f.kind();
    o.message = f.what();
    return o;
  }
  o.wrong_elements = count_wrong();
  o.kind = o.wrong_elements ? Outcome::Kind::wrong : Outcome::Kind::correct;
  return o;
}

// Elements a kernel got wrong (tests/common/compare.h: NaN counts, a wrong length is one).
size_t mismatches(const std::vector<float>& got, const std::vector<double>& want, double rtol = 1e-5) {
  return static_cast<size_t>(seg::test::compare(got, want, seg::test::Tolerance{1e-6, rtol}).mismatches);
}

std::vector<float> ramp(size_t n, float scale = 0.25f) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = 1.0f + scale * static_cast<float>(i % 13);
  return x;
}

// ---- barriers ------------------------------------------------------------------------------------
Outcome block_sums(void (*launcher)(const float*, float*, int)) {
  const int blocks = 4, threads = 256;
  const std::vector<float> x = ramp(blocks * threads);
  std::vector<double> want(blocks, 0.0);
  for (int i = 0; i < blocks * threads; ++i) want[i / threads] += x[i];
  DeviceBuffer<float> dx(x), sums(blocks);
  return attempt([&] { launcher(dx.get(), sums.get(), blocks); }, [&] { return mismatches(sums.download(), want); });
}
Outcome warp_sums_no_barrier() { return block_sums(&warp_sums_without_barrier); }
Outcome tree_no_barrier() { return block_sums(&tree_reduction_without_barrier); }

Outcome staging_no_trailing_barrier() {
  const int tiles = 4, threads = 256;
  const std::vector<float> x = ramp(tiles * threads);
  std::vector<double> want(x.size());
  for (int i = 0; i < tiles * threads; ++i)
    want[i] = double(x[i]) + x[(i / threads) * threads + (i % threads + 1) % threads];
  DeviceBuffer<float> dx(x), y(x.size());
  return attempt([&] { staging_without_trailing_barrier(dx.get(), y.get(), tiles); },
                 [&] { return mismatches(y.download(), want); });
}

Outcome half_tile_no_barrier() {
  std::vector<__half> x(256);
  for (int i = 0; i < 256; ++i) x[i] = __float2half(static_cast<float>(i % 50) + 0.5f);
  std::vector<double> want(256);
  for (int i = 0; i < 256; ++i) want[i] = __half2float(x[(i + 1) % 256]);
  DeviceBuffer<__half> dx(x), y(256);
  return attempt([&] { half_tile_without_barrier(dx.get(), y.get()); },
                 [&] {
                   std::vector<float> got;
                   for (const __half h : y.download()) got.push_back(__half2float(h));
                   return mismatches(got, want);
                 });
}

Outcome early_return_before_barrier() {
  const int n = 300, threads = 256;
  const std::vector<float> x = ramp(n);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) {
    const int next = (i / threads) * threads + (i % threads + 1) % threads;
    want[i] = double(x[i]) + (next < n ? x[next] : 0.0f);
  }
  DeviceBuffer<float> dx(x), y(n);
  return attempt([&] { broken::early_return_before_barrier(dx.get(), y.get(), n); },
                 [&] { return mismatches(y.download(), want); });
}

Outcome barriers_different_sites() {
  const std::vector<float> x = ramp(64);
  std::vector<double> want(64);
  for (int t = 0; t < 64; ++t) want[t] = x[63 - t] * (t < 32 ? 1.0 : 2.0);
  DeviceBuffer<float> dx(x), y(64);
  return attempt([&] { barriers_at_different_sites(dx.get(), y.get()); },
                 [&] { return mismatches(y.download(), want); });
}

// ---- memory ----------------------------------------------------------------------------------------
Outcome read_past_end() {
  const int n = 1024;  // 4096 bytes: the allocation ends exactly at its guard page
  const std::vector<float> x = ramp(n);
  double want = 0;
  for (float v : x) want += v;
  DeviceBuffer<float> dx(x), sum(1);
  sum.fill_bytes(0);
  return attempt([&] { read_one_past_the_end(dx.get(), n, sum.get()); },
                 [&] { return mismatches(sum.download(), {want}); });
}

Outcome write_past_end() {
  const int n = 1000;  // 4000 bytes: the write lands in the allocation's rounding slack
  DeviceBuffer<float> y(n);
  return attempt([&] { write_one_past_the_end(y.get(), n); },
                 [&] { return mismatches(y.download(), std::vector<double>(n, 1.0)); });
}

Outcome static_shared_oob() {
  const std::vector<float> x = ramp(128);
  std::vector<double> want(128);
  for (int t = 0; t < 128; ++t) want[t] = x[(t + 1) % 64];
  DeviceBuffer<float> dx(x), y(128);
  return attempt([&] { static_shared_out_of_bounds(dx.get(), y.get()); },
                 [&] { return mismatches(y.download(), want); });
}

Outcome dynamic_shared_overrun_case(int threads, int launched_floats) {
  std::vector<double> want(threads);
  for (int t = 0; t < threads; ++t) want[t] = t;
  DeviceBuffer<float> y(threads);
  return attempt([&] { dynamic_shared_overrun(y.get(), threads, launched_floats); },
                 [&] { return mismatches(y.download(), want); });
}
// 64 floats = 256 bytes, a multiple of 128: thread 64 writes into the guard page.
Outcome dynamic_shared_guard_overrun() { return dynamic_shared_overrun_case(128, 64); }
// 100 floats = 400 bytes, rounded to 512: thread 100 writes into the slack (canary).
Outcome dynamic_shared_slack_overrun() { return dynamic_shared_overrun_case(101, 100); }

Outcome dynamic_shared_uninitialised_case() {
  const std::vector<float> x = ramp(128);
  std::vector<double> want(128);
  for (int t = 0; t < 128; ++t)
    want[t] = double(x[t]) + (t + 1 < 128 ? x[t + 1] : 0.0f);  // intended: zero past the end
  DeviceBuffer<float> dx(x), y(128);
  return attempt([&] { dynamic_shared_uninitialised(dx.get(), y.get()); },
                 [&] { return mismatches(y.download(), want); });
}

Outcome cross_block_non_atomic() {
  const int blocks = 64;
  DeviceBuffer<float> total(1);
  total.fill_bytes(0);
  return attempt([&] { non_atomic_cross_block_add(total.get(), blocks); },
                 [&] { return mismatches(total.download(), {double(blocks)}); });
}

Outcome trap_case() {
  DeviceBuffer<float> y(32);
  return attempt([&] { trap(y.get()); }, [&] { return size_t{0}; });
}

Outcome stack_overflow_case() {
  DeviceBuffer<float> y(32);
  return attempt([&] { stack_overflow(y.get()); }, [&] { return size_t{0}; });
}

// ---- warps --------------------------------------------------------------------------------------------
Outcome per_thread(int threads, void (*launcher)(const float*, float*),
                   const std::function<double(int, const std::vector<float>&)>& want_of,
                   const std::vector<int>& checked = {}) {
  const std::vector<float> x = ramp(threads);
  DeviceBuffer<float> dx(x), y(threads);
  y.fill_bytes(0);
  return attempt([&] { launcher(dx.get(), y.get()); },
                 [&] {
                   const std::vector<float> got = y.download();
                   std::vector<float> g;
                   std::vector<double> w;
                   for (int t = 0; t < threads; ++t) {
                     if (!checked.empty() && std::find(checked.begin(), checked.end(), t) == checked.end()) continue;
                     g.push_back(got[t]);
                     w.push_back(want_of(t, x));
                   }
                   return mismatches(g, w);
                 });
}
Outcome divergent_shuffle_barrier() {
  return per_thread(64, &divergent_shuffle_then_barrier, [](int t, const std::vector<float>& x) {
    return t % 32 < 16 ? double(x[t]) + x[t ^ 16] : double(x[t]);
  });
}
Outcome divergent_shuffle_exit() {
  return per_thread(64, &divergent_shuffle_then_exit,
                    [](int t, const std::vector<float>& x) { return t % 32 < 16 ? double(x[t]) + x[t ^ 16] : 0.0; });
}
// Intended: lane 0 of each warp holds the sum of its warp's (existing) lanes.
Outcome partial_warp() {
  return per_thread(48, &partial_warp_reduction,
                    [](int t, const std::vector<float>& x) {
                      double s = 0;
                      for (int i = t; i < std::min(t + 32, 48); ++i) s += x[i];
                      return s;
                    },
                    {0, 32});
}
Outcome mask_without_caller() {
  return per_thread(32, &shuffle_mask_without_caller, [](int, const std::vector<float>& x) { return double(x[16]); });
}
Outcome mismatched() {
  return per_thread(32, &mismatched_collectives,
                    [](int t, const std::vector<float>& x) { return t % 2 ? double(x[0]) : 4294967295.0; });
}
Outcome bad_width() {
  return per_thread(32, &bad_shuffle_width, [](int t, const std::vector<float>& x) { return double(x[t ^ 1]); });
}

// ---- WMMA -----------------------------------------------------------------------------------------------
Outcome wmma_case(const std::function<void(const __half*, const __half*, const float*, float*)>& launcher,
                  bool with_bias) {
  std::vector<__half> a(16 * 16 + 16), b(16 * 16);
  for (size_t i = 0; i < a.size(); ++i) a[i] = __float2half(0.125f * static_cast<float>(i % 9));
  for (size_t i = 0; i < b.size(); ++i) b[i] = __float2half(0.25f * static_cast<float>(i % 5));
  std::vector<float> bias(16);
  for (int j = 0; j < 16; ++j) bias[j] = static_cast<float>(j);
  std::vector<double> want(256);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double s = with_bias ? bias[j] : 0.0;
      for (int k = 0; k < 16; ++k) s += double(__half2float(a[i * 16 + k])) * __half2float(b[k * 16 + j]);
      want[i * 16 + j] = s;
    }
  DeviceBuffer<__half> da(a), db(b);
  DeviceBuffer<float> dbias(bias), c(256);
  return attempt([&] { launcher(da.get(), db.get(), dbias.get(), c.get()); },
                 [&] { return mismatches(c.download(), want); });
}
Outcome wmma_bias() {
  return wmma_case([](auto a, auto b, auto bias, auto c) { wmma_bias_by_lane(a, b, bias, c); }, true);
}
Outcome wmma_lane_dependent() {
  return wmma_case([](auto a, auto b, auto, auto c) { wmma_lane_dependent_fragment(a, b, c); }, false);
}
Outcome wmma_misaligned() {
  return wmma_case([](auto a, auto b, auto, auto c) { wmma_misaligned_pointer(a, b, c); }, false);
}
Outcome wmma_ldm() {
  return wmma_case([](auto a, auto b, auto, auto c) { wmma_bad_ldm(a, b, c); }, false);
}
Outcome wmma_half_warp() {
  return wmma_case([](auto a, auto b, auto, auto c) { wmma_divergent(a, b, c); }, false);
}

// ---- PTX helpers ------------------------------------------------------------------------------------------
Outcome cp_async_no_wait() {
  const std::vector<float> x = ramp(128);
  std::vector<double> want(128);
  for (int t = 0; t < 128; ++t) want[t] = x[(t + 1) % 128];
  DeviceBuffer<float> dx(x), y(128);
  return attempt([&] { cp_async_without_wait(dx.get(), y.get()); }, [&] { return mismatches(y.download(), want); });
}
Outcome ldmatrix_unaligned() {
  std::vector<unsigned short> x(8 * 12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<unsigned short>(i);
  DeviceBuffer<unsigned short> dx(x);
  DeviceBuffer<unsigned> y(32);
  return attempt([&] { ldmatrix_misaligned(dx.get(), y.get()); }, [&] { return size_t{0}; });
}
Outcome cp_async_host_source() {
  const std::vector<float> host = ramp(32);
  DeviceBuffer<float> y(8);
  return attempt([&] { cp_async_from_host_memory(host.data(), y.get()); }, [&] { return size_t{0}; });
}

}  // namespace

std::string Outcome::summary() const {
  switch (kind) {
    case Kind::correct:
      return "correct";
    case Kind::wrong:
      return "wrong";
    case Kind::fault:
      return std::string("fault:") + seg::sim::fault_kind_name(fault_kind);
  }
  return "?";
}

const std::vector<Bug>& bug_catalogue() {
  static const std::vector<Bug> bugs = {
      {"warp_sums_no_barrier", "missing barrier before warp 0 reads the warp sums", &warp_sums_no_barrier},
      {"tree_no_barrier", "tree reduction, barrier missing inside the loop", &tree_no_barrier},
      {"staging_no_trailing_barrier", "staging loop, trailing barrier missing (write after read)",
       &staging_no_trailing_barrier},
      {"half_tile_no_barrier", "__half tile read without a barrier after the writes", &half_tile_no_barrier},
      {"early_return_before_barrier", "`if (i >= n) return;` before __syncthreads", &early_return_before_barrier},
      {"barriers_different_sites", "two groups wait at different __syncthreads", &barriers_different_sites},
      {"read_past_end", "global read `i <= n` (1 past the end)", &read_past_end},
      {"write_past_end", "global write `i <= n` (1 past the end)", &write_past_end},
      {"static_shared_oob", "static shared `buf[64]` indexed by 128 threads", &static_shared_oob},
      {"dynamic_shared_guard_overrun", "dynamic shared memory used past the launched size (256 B launched)",
       &dynamic_shared_guard_overrun},
      {"dynamic_shared_slack_overrun", "dynamic shared memory written 4 B past the launched 400 B",
       &dynamic_shared_slack_overrun},
      {"dynamic_shared_uninitialised", "dynamic shared memory read before anyone wrote it",
       &dynamic_shared_uninitialised_case},
      {"cross_block_non_atomic", "every block does `*total += 1` without an atomic", &cross_block_non_atomic},
      {"stack_overflow", "1 MiB local array in a kernel", &stack_overflow_case},
      {"trap", "a thread calls __trap()", &trap_case},
      {"divergent_shuffle_barrier", "full-mask shuffle inside `if (lane < 16)`, other lanes at a barrier",
       &divergent_shuffle_barrier},
      {"divergent_shuffle_exit", "full-mask shuffle inside `if (lane < 16)`, other lanes exited",
       &divergent_shuffle_exit},
      {"partial_warp", "48-thread block, full-mask shuffle reduction", &partial_warp},
      {"mask_without_caller", "shuffle mask that leaves out calling lanes", &mask_without_caller},
      {"mismatched_collectives", "odd lanes shuffle while even lanes ballot (same mask)", &mismatched},
      {"bad_width", "shuffle width 12 (not a power of two)", &bad_width},
      {"wmma_bias_by_lane", "WMMA epilogue adds a bias by column computed from the lane", &wmma_bias},
      {"wmma_lane_dependent", "lane 0 patches an element of its A fragment before mma_sync", &wmma_lane_dependent},
      {"wmma_misaligned", "load_matrix_sync from a 16-byte (not 32-byte) aligned pointer", &wmma_misaligned},
      {"wmma_bad_ldm", "load_matrix_sync with ldm 12 halves (24 bytes)", &wmma_ldm},
      {"wmma_divergent", "WMMA operations by half a warp", &wmma_half_warp},
      {"cp_async_no_wait", "cp.async data read after a barrier but without cp.async.wait", &cp_async_no_wait},
      {"ldmatrix_misaligned", "ldmatrix row addresses 8 bytes off 16-byte alignment", &ldmatrix_unaligned},
      {"cp_async_from_host", "cp.async from host (not device) memory", &cp_async_host_source},
  };
  return bugs;
}

const Bug* find_bug(const std::string& id) {
  for (const Bug& b : bug_catalogue())
    if (id == b.id) return &b;
  return nullptr;
}

BugRun run_bug(const std::string& id, const std::vector<std::string>& env) {
  std::vector<std::string> child_env = env;
  child_env.push_back("SEG_SIM_TEST_BUG=" + id);
  const ChildResult r = run_child("child: run bug", child_env);
  BugRun run;
  run.exit_code = r.exit_code;
  run.signal = r.signal;
  run.output = r.output;
  const std::string tag = "seg-sim-outcome: ";
  const size_t at = r.output.find(tag);
  if (at != std::string::npos) {
    const size_t end = r.output.find('\n', at);
    run.outcome = r.output.substr(at + tag.size(), end - at - tag.size());
  }
  return run;
}

}  // namespace simtest

// The child side: runs the bug named by SEG_SIM_TEST_BUG and prints its outcome.
TEST_CASE("child: run bug" * doctest::skip()) {
  const char* id = std::getenv("SEG_SIM_TEST_BUG");
  REQUIRE(id != nullptr);
  const simtest::Bug* bug = simtest::find_bug(id);
  REQUIRE(bug != nullptr);
  const simtest::Outcome o = bug->run();
  if (o.kind == simtest::Outcome::Kind::fault) std::fprintf(stdout, "%s\n", o.message.c_str());
  std::fprintf(stdout, "seg-sim-outcome: %s\n", o.summary().c_str());
  std::fflush(stdout);
}
