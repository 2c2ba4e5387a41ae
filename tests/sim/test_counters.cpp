// The performance counters (kernels/sim/counters.h) on kernels whose counts are known in closed
// form (tests/sim/counter_kernels.cu; each number is derived there and in docs/cuda-simulator.md,
// "Counters"), and the H200 roofline model (kernels/sim/roofline.h) on inputs worked out by hand.
// Counters exist only in the default build: under ASan and TSan kernel code is not instrumented,
// and these cases are skipped (reported as skipped, not passed).
#include <cuda_fp16.h>

#include <cmath>
#include <string>

#include "kernels/sim/counters.h"
#include "tests/sim/broken_kernels.h"
#include "tests/sim/sim_test_kernels.h"
#include "tests/sim/sim_test_util.h"

using seg::sim::KernelCounters;
using simtest::DeviceBuffer;

namespace {

constexpr bool kNoCounters = !SEG_SIM_TEST_INSTRUMENTED;

// Runs `launch` with the counters on (and the given options; by default the environment's, so
// SEG_SIM_PROFILE=1 prints each launch's table) and returns its counters.
template <class F>
KernelCounters counted(F launch, seg::sim::Options o = seg::sim::options()) {
  o.counters = true;
  seg::sim::ScopedOptions scoped(o);
  launch();
  return seg::sim::last_launch_counters();
}

std::vector<float> iota_floats(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 1000);
  return v;
}

}  // namespace

TEST_CASE("sim counters: coalesced copy, 32 floats per warp: 4 sectors per request" * doctest::skip(kNoCounters)) {
  REQUIRE(seg::sim::counters_available());
  const int n = 4096;
  DeviceBuffer<float> x(iota_floats(n)), y(n);
  const KernelCounters c = counted([&] { simtest::copy_floats(x.get(), y.get(), n, 256); });
  CHECK(c.kernel == "copy_kernel");
  CHECK(c.launches == 1);
  CHECK(c.blocks == 16);
  CHECK(c.warps == 128);
  // One request per warp and direction; 32 lanes x 4 bytes = 128 bytes = 4 sectors.
  CHECK(c.global_load.requests == 128);
  CHECK(c.global_load.sectors == 512);
  CHECK(c.global_load.bytes == 4 * n);
  CHECK(c.global_load.per_request() == 4.0);
  CHECK(c.global_store.requests == 128);
  CHECK(c.global_store.sectors == 512);
  CHECK(c.global_unique_sectors == 1024);  // x and y, 16 KiB each
  CHECK(c.shared_load.requests == 0);
  CHECK(c.active_lane_share() == 1.0);
  CHECK(y.download() == iota_floats(n));

  // A ragged size: warp 31 has 8 active lanes (elements 992-999), 32 bytes, 1 sector.
  DeviceBuffer<float> y2(1000);
  const KernelCounters r = counted([&] { simtest::copy_floats(x.get(), y2.get(), 1000, 128); });
  CHECK(r.global_load.requests == 32);
  CHECK(r.global_load.sectors == 31 * 4 + 1);
  CHECK(r.global_load.bytes == 4000);
  CHECK(r.active_lanes == 2 * (31 * 32 + 8));
}

TEST_CASE("sim counters: strided reads, stride 32: 32 sectors per request" * doctest::skip(kNoCounters)) {
  const int n = 1024;
  DeviceBuffer<float> x(iota_floats(32 * n)), y(n);
  for (const int stride : {1, 2, 4, 8, 32}) {
    CAPTURE(stride);
    const KernelCounters c = counted([&] { simtest::strided_read(x.get(), y.get(), n, stride); });
    // 32 lanes span 32 x stride floats: 4 x stride sectors, at most one per lane.
    const uint64_t per_request = std::min(4 * stride, 32);
    CHECK(c.global_load.requests == n / 32);
    CHECK(c.global_load.sectors == per_request * (n / 32));
    CHECK(c.global_load.bytes == 4 * n);  // the same useful bytes every time
    CHECK(c.global_store.sectors == 4 * (n / 32));
  }
}

TEST_CASE("sim counters: 16- and 8-byte vector loads: 16 and 8 sectors per request, every byte used" *
          doctest::skip(kNoCounters)) {
  const int floats = 4096;
  DeviceBuffer<float> x(iota_floats(floats)), y(floats);
  // float4: 32 lanes x 16 bytes = 512 bytes = 16 sectors in one request (4 per quarter warp).
  const KernelCounters c4 = counted([&] { simtest::copy_float4(x.get(), y.get(), floats / 4); });
  CHECK(c4.global_load.requests == floats / 4 / 32);
  CHECK(c4.global_load.sectors == 16 * (floats / 4 / 32));
  CHECK(c4.global_load.per_request() == 16.0);
  CHECK(c4.global_load.bytes == 32 * c4.global_load.sectors);  // 100% of the fetched bytes are used
  CHECK(y.download() == iota_floats(floats));
  // float2: 256 bytes, 8 sectors.
  const KernelCounters c2 = counted([&] { simtest::copy_float2(x.get(), y.get(), floats / 2); });
  CHECK(c2.global_load.requests == floats / 2 / 32);
  CHECK(c2.global_load.per_request() == 8.0);
  CHECK(c2.global_store.per_request() == 8.0);
}

TEST_CASE("sim counters: shared-memory transpose, 31 bank conflicts per request without padding, 0 with" *
          doctest::skip(kNoCounters)) {
  const int rows = 64, cols = 96;
  const std::vector<float> in = iota_floats(rows * cols);
  DeviceBuffer<float> din(in), out(in.size());
  // 6 blocks of 32 x 8 threads (8 warps); each warp does 4 row writes and 4 column reads.
  const KernelCounters bad = counted([&] { simtest::broken::transpose_bank_conflicts(din.get(), out.get(), rows, cols); });
  CHECK(bad.shared_store.requests == 192);
  CHECK(bad.shared_store.bank_conflicts == 0);  // lane = column: 32 banks
  CHECK(bad.shared_load.requests == 192);
  CHECK(bad.shared_load.sectors == 192 * 32);  // wavefronts: 32 words in one bank
  CHECK(bad.shared_load.bank_conflicts == 192 * 31);
  CHECK(bad.barriers == 6);

  const KernelCounters good = counted([&] { simtest::transpose_padded(din.get(), out.get(), rows, cols); });
  CHECK(good.shared_load.requests == 192);
  CHECK(good.shared_load.sectors == 192);
  CHECK(good.shared_load.bank_conflicts == 0);
  CHECK(good.shared_store.bank_conflicts == 0);
  // Both read rows of 32 floats and write rows of 32 floats: 4 sectors per request.
  CHECK(good.global_load.requests == 192);
  CHECK(good.global_load.per_request() == 4.0);
  CHECK(good.global_store.per_request() == 4.0);
  CHECK(bad.global_load.sectors == good.global_load.sectors);
  const std::vector<float> got = out.download();
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) REQUIRE(got[c * rows + r] == in[r * cols + c]);

  // The counts are properties of the kernel, not of the schedule.
  for (const auto& config : simtest::all_configs()) {
    CAPTURE(config.name);
    const KernelCounters again =
        counted([&] { simtest::broken::transpose_bank_conflicts(din.get(), out.get(), rows, cols); }, config.options);
    CHECK(again.shared_load.bank_conflicts == bad.shared_load.bank_conflicts);
    CHECK(again.shared_load.requests == bad.shared_load.requests);
    CHECK(again.global_load.sectors == bad.global_load.sectors);
    CHECK(again.global_unique_sectors == bad.global_unique_sectors);
  }
}

TEST_CASE("sim counters: shared-memory broadcast, 8-byte phases and a stride of 2" * doctest::skip(kNoCounters)) {
  DeviceBuffer<float> y(32);
  struct Case {
    int pattern;
    uint64_t wavefronts, conflicts;
  };
  // 0: one word for all lanes (broadcast); 1: doubles 2l: per half-warp phase lanes l and l + 8
  // share banks, 2 wavefronts per phase; 2: floats 2l: lanes l and l + 16 share a bank.
  for (const Case& k : {Case{0, 1, 0}, Case{1, 4, 2}, Case{2, 2, 1}}) {
    CAPTURE(k.pattern);
    const KernelCounters c = counted([&] { simtest::shared_patterns(y.get(), k.pattern); });
    CHECK(c.shared_load.requests == 1);
    CHECK(c.shared_load.sectors == k.wavefronts);
    CHECK(c.shared_load.bank_conflicts == k.conflicts);
    // The fill: 4 float stores (1 wavefront each) and 2 double stores (2 phases each), no conflicts.
    CHECK(c.shared_store.requests == 6);
    CHECK(c.shared_store.sectors == 4 + 2 * 2);
    CHECK(c.shared_store.bank_conflicts == 0);
  }
}

TEST_CASE("sim counters: divergence, barriers and FMAs" * doctest::skip(kNoCounters)) {
  DeviceBuffer<float> x(iota_floats(64)), y(64);
  // Lanes 0-7 of 2 warps: every counted instruction has 8 of 32 lanes active.
  const KernelCounters d = counted([&] { simtest::divergent_load(x.get(), y.get(), 64); });
  CHECK(d.global_load.requests == 2);
  CHECK(d.global_load.sectors == 2);
  CHECK(d.active_lane_share() == 0.25);

  DeviceBuffer<int> out(3 * 64);
  const KernelCounters b = counted([&] { simtest::barriers(out.get(), 3, 64, 5); });
  CHECK(b.barriers == 15);  // 5 per block

  const KernelCounters f = counted([&] { simtest::fma_loop(x.get(), y.get(), 64, 10); });
  CHECK(f.fp32_fma == 640);
  CHECK(f.mma_instructions == 0);
}

namespace {

std::vector<__half> halves(size_t n, float scale) {
  std::vector<__half> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = __float2half(scale * static_cast<float>(i % 7));
  return v;
}

}  // namespace

TEST_CASE("sim counters: tensor-core MMAs of the WMMA and mma.sync GEMMs" * doctest::skip(kNoCounters)) {
  struct Size {
    int m, n, k;
  };
  for (const Size s : {Size{64, 64, 32}, Size{77, 45, 50}, Size{128, 64, 64}}) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
    DeviceBuffer<__half> a(halves(static_cast<size_t>(s.m) * s.k, 0.25f)), b(halves(static_cast<size_t>(s.k) * s.n, 0.5f));
    DeviceBuffer<float> c(static_cast<size_t>(s.m) * s.n);
    // wmma_gemm.cu: 64 x 64 block tiles, 4 warps, K steps of 32, each warp 2 x 2 fragments and 2
    // k-substeps: 8 mma_sync (m16n16k16, 8192 FLOPs) per warp and K step.
    const uint64_t blocks = static_cast<uint64_t>((s.n + 63) / 64) * ((s.m + 63) / 64);
    const uint64_t ksteps = static_cast<uint64_t>((s.k + 31) / 32);
    const KernelCounters w = counted([&] { simtest::wmma_gemm(a.get(), b.get(), c.get(), s.m, s.n, s.k, 1.0f); });
    CHECK(w.mma_instructions == blocks * 4 * 8 * ksteps);
    CHECK(w.tensor_f16_flops == w.mma_instructions * 2 * 16 * 16 * 16);
    CHECK(w.tensor_tf32_flops == 0);
    CHECK(w.barriers == blocks * (2 * ksteps + 1));
    // The padded tiles (rows of 40, 72 and 68 elements) keep every shared access conflict-free.
    // (Ragged sizes make the tile loads divergent, where the pairing of lanes is approximate.)
    if (s.m % 64 == 0 && s.n % 64 == 0 && s.k % 32 == 0) {
      CHECK(w.shared_load.bank_conflicts == 0);
      CHECK(w.shared_store.bank_conflicts == 0);
    }
    CHECK(w.static_smem_known);
    CHECK(w.static_smem_bytes == 64 * 40 * 2 + 32 * 72 * 2);  // as + bs
#if SEG_SIM_TEST_NVCC_TABLES
    CHECK(w.registers_per_thread > 0);  // from nvcc --resource-usage, sm_90
#else
    CHECK(w.registers_per_thread == -1);  // no nvcc at build time: unknown
#endif
    if (s.m % 64 == 0 && s.n % 64 == 0 && s.k % 32 == 0)
      CHECK(w.tensor_f16_flops == 2ull * s.m * s.n * s.k);  // no padding work when the tiles fit

    // ptx.cu: 32 x 32 block tiles, 4 warps, K steps of 16: 2 mma.sync m16n8k16 (4096 FLOPs) each.
    if (s.k % 8 == 0 && s.n % 8 == 0) {
      const uint64_t pblocks = static_cast<uint64_t>((s.n + 31) / 32) * ((s.m + 31) / 32);
      const uint64_t tiles = static_cast<uint64_t>((s.k + 15) / 16);
      const KernelCounters p = counted([&] { simtest::ptx_gemm(a.get(), b.get(), c.get(), s.m, s.n, s.k); });
      CHECK(p.mma_instructions == pblocks * 4 * 2 * tiles);
      CHECK(p.tensor_f16_flops == p.mma_instructions * 2 * 16 * 8 * 16);
      CHECK(p.shared_load.bank_conflicts == 0);  // ldmatrix rows of 24 and 40 halves
      // cp.async: per block and K tile, 2 warps copy 16 rows x 32 bytes of A, 2 warps 16 rows x
      // 64 bytes of B, 16 bytes per lane: 4 requests of 16 sectors.
      if (s.m % 32 == 0 && s.n % 32 == 0 && s.k % 16 == 0) {
        CHECK(p.global_load.requests == pblocks * 4 * tiles);
        CHECK(p.global_load.sectors == 16 * p.global_load.requests);
      }
    }
  }
}

TEST_CASE("sim counters: totals per kernel and the profile table" * doctest::skip(kNoCounters)) {
  seg::sim::reset_kernel_counter_totals();
  const int n = 2048;
  DeviceBuffer<float> x(iota_floats(n)), y(n);
  for (int i = 0; i < 3; ++i) counted([&] { simtest::copy_floats(x.get(), y.get(), n, 128); });
  counted([&] { simtest::strided_read(x.get(), y.get(), 64, 32); });
  const std::vector<KernelCounters> totals = seg::sim::kernel_counter_totals();
  REQUIRE(totals.size() == 2);
  CHECK(totals[0].kernel == "copy_kernel");
  CHECK(totals[0].launches == 3);
  CHECK(totals[0].global_load.requests == 3 * n / 32);
  CHECK(totals[0].estimated_us_sum == doctest::Approx(3 * totals[0].estimate.estimate_us));
  CHECK(totals[1].kernel == "strided_read_kernel");

  const std::string table = seg::sim::format_counters(seg::sim::last_launch_counters());
  INFO(table);
  CHECK(table.find("seg::sim profile: strided_read_kernel <<<grid (1,1,1), block (128,1,1), 0 B dynamic shared>>>") !=
        std::string::npos);
  CHECK(table.find("2 requests, 64 sectors (32.00 per request)") != std::string::npos);
  CHECK(table.find("H200 ESTIMATE (a roofline model, not a measurement)") != std::string::npos);

  // SEG_SIM_PROFILE=1 prints a table per launch and the totals at exit.
  const simtest::ChildResult r =
      simtest::run_child("child: run bug", {"SEG_SIM_TEST_BUG=uncoalesced_rows", "SEG_SIM_PROFILE=1"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("seg::sim profile: row_sums_uncoalesced_kernel") != std::string::npos);
  CHECK(r.output.find("320 requests, 10240 sectors (32.00 per request)") != std::string::npos);
  CHECK(r.output.find("seg::sim profile: totals per kernel (H200 time: an estimate from a model, not a measurement)") !=
        std::string::npos);
}

TEST_CASE("sim counters: template instances launched from one SEG_LAUNCH line are kept and named apart" *
          doctest::skip(kNoCounters)) {
  // tests/sim/counter_kernels.cu launches scaled_copy_kernel<2> and <3> as `kernel`, as the
  // tensor-core launcher (kernels/cuda/gemm/device_launch.h) launches every GemmKernel.
  seg::sim::reset_kernel_counter_totals();
  const int n = 256;
  DeviceBuffer<float> x(iota_floats(n)), y2(n), y3(n);
  counted([&] { simtest::scaled_copy(x.get(), y2.get(), n, 2); });
  counted([&] { simtest::scaled_copy(x.get(), y3.get(), n, 3); });
  counted([&] { simtest::scaled_copy(x.get(), y2.get(), n, 2); });
  const std::vector<KernelCounters> totals = seg::sim::kernel_counter_totals();
  REQUIRE(totals.size() == 2);
  for (const KernelCounters& t : totals) {
    CAPTURE(t.symbol);
    CHECK(t.kernel == "kernel");
    CHECK(t.global_load.requests == t.launches * n / 32);
  }
  CHECK(totals[0].launches == 2);
  CHECK(totals[1].launches == 1);
  CHECK(totals[0].symbol.find("scaled_copy_kernel<2>(float const*, float*, int)") != std::string::npos);
  CHECK(totals[1].symbol.find("scaled_copy_kernel<3>(float const*, float*, int)") != std::string::npos);
  CHECK(seg::sim::kernel_display_name(totals[0]) == "scaled_copy_kernel<2>");
  CHECK(seg::sim::kernel_display_name(totals[1]) == "scaled_copy_kernel<3>");
  const std::string table = seg::sim::format_counters(totals[1]);
  INFO(table);
  CHECK(table.find("seg::sim profile: scaled_copy_kernel<3> <<<grid (2,1,1), block (128,1,1), 0 B dynamic shared>>>") ==
        0);
  std::vector<float> want2(n), want3(n);
  for (int i = 0; i < n; ++i) want2[i] = 2.0f * static_cast<float>(i), want3[i] = 3.0f * static_cast<float>(i);
  CHECK(y2.download() == want2);
  CHECK(y3.download() == want3);
}

TEST_CASE("sim counters: the display name drops namespaces, return type and parameters, not template arguments") {
  KernelCounters c;
  c.kernel = "kernel";
  CHECK(seg::sim::kernel_display_name(c) == "kernel");  // no symbol: the launch text
  c.symbol =
      "void seg::cuda::tc::gemm_tc_kernel<seg::cuda::tc::GemmKernel<float, seg::cuda::tc::TileShape<64, 64, 16, 2, 2, "
      "3>, (seg::cuda::tc::Major)0, (seg::cuda::tc::SmemKind)3> >(seg::cuda::tc::GemmKernel<float, "
      "seg::cuda::tc::TileShape<64, 64, 16, 2, 2, 3>, (seg::cuda::tc::Major)0, (seg::cuda::tc::SmemKind)3>::Params)";
  CHECK(seg::sim::kernel_display_name(c) ==
        "gemm_tc_kernel<GemmKernel<float, TileShape<64, 64, 16, 2, 2, 3>, (Major)0, (SmemKind)3> >");
  c.symbol = "(anonymous namespace)::copy_kernel(float const*, float*, int)";
  CHECK(seg::sim::kernel_display_name(c) == "copy_kernel");
  c.symbol = "void seg::cuda::(anonymous namespace)::fill_generic_kernel<float>(float*, seg::CopyLayout, long, float)";
  CHECK(seg::sim::kernel_display_name(c) == "fill_generic_kernel<float>");
}

TEST_CASE("sim counters: a launch that faults records nothing" * doctest::skip(kNoCounters)) {
  const int n = 64;
  DeviceBuffer<float> x(iota_floats(n)), y(n);
  counted([&] { simtest::copy_floats(x.get(), y.get(), n, 64); });
  const std::vector<float> host(n, 1.0f);
  seg::sim::Options o;
  o.counters = true;
  seg::sim::ScopedOptions scoped(o);
  // The fault surfaces at the synchronisation after the (asynchronous) launch.
  CHECK_THROWS_AS((simtest::broken::scale_by_two(host.data(), y.get(), n), cudaDeviceSynchronize()),
                  seg::sim::KernelFault);
  CHECK(seg::sim::last_launch_counters().kernel == "copy_kernel");
}

// ---- the H200 model, on inputs worked out by hand --------------------------------------------------

TEST_CASE("sim roofline: occupancy limits, waves and the bound") {
  using seg::sim::RooflineInput;
  RooflineInput in;
  in.blocks = 264;
  in.threads_per_block = 256;  // 8 warps: 64 / 8 = 8 blocks per SM by threads
  in.registers_per_thread = 32;  // 1024 registers per warp: 64 warps, 8 blocks
  in.unique_sector_bytes = 48'000'000;  // fits in L2: DRAM = 48 MB = 10 us at 4.8 TB/s
  in.request_sector_bytes = 96'000'000;
  in.tensor_f16_flops = 989'000'000;  // 1 us
  seg::sim::RooflineEstimate e = seg::sim::estimate_h200(in);
  CHECK(e.blocks_per_sm == 8);
  CHECK(std::string(e.occupancy_limit) == "threads");
  CHECK(e.occupancy == 1.0);
  CHECK(e.waves == 1);  // 264 blocks, 1056 slots
  CHECK(e.grid_factor == 1.0);
  CHECK(e.dram_from_unique);
  CHECK(e.memory_us == doctest::Approx(10.0));
  CHECK(e.tensor_us == doctest::Approx(1.0));
  CHECK(e.estimate_us == doctest::Approx(10.0));
  CHECK(std::string(e.bound) == "memory");

  // Half the SMs idle: twice the time. More registers: 128 per thread -> 4096 per warp -> 16 warps.
  in.blocks = 66;
  in.registers_per_thread = 128;
  e = seg::sim::estimate_h200(in);
  CHECK(e.blocks_per_sm == 2);
  CHECK(std::string(e.occupancy_limit) == "registers");
  CHECK(e.grid_factor == 2.0);
  CHECK(e.estimate_us == doctest::Approx(20.0));

  // 100 KiB of shared memory per block: (102400 + 1024) B -> 2 per 228 KiB SM. 3 waves of 264
  // slots for 700 blocks: 792 / 700 of the ideal time. The footprint exceeds L2: every sector counts.
  in.blocks = 700;
  in.registers_per_thread = -1;
  in.shared_bytes_per_block = 100 * 1024;
  in.unique_sector_bytes = 60'000'000;
  in.request_sector_bytes = 96'000'000;
  e = seg::sim::estimate_h200(in);
  CHECK(e.blocks_per_sm == 2);
  CHECK(std::string(e.occupancy_limit) == "shared memory");
  CHECK(e.waves == 3);
  CHECK(e.grid_factor == doctest::Approx(792.0 / 700.0));
  CHECK_FALSE(e.dram_from_unique);
  CHECK(e.memory_us == doctest::Approx(20.0));
  CHECK(e.estimate_us == doctest::Approx(20.0 * 792.0 / 700.0));

  // Tiny work: the launch latency floor. FP32: 67e9 FMAs = 134 GFLOP = 2000 us.
  RooflineInput tiny;
  tiny.blocks = 1;
  tiny.threads_per_block = 32;
  tiny.unique_sector_bytes = 4096;
  e = seg::sim::estimate_h200(tiny);
  CHECK(e.estimate_us == 2.0);
  CHECK(std::string(e.bound) == "launch latency");
  tiny.blocks = 132;
  tiny.fp32_fma = 67'000'000'000;
  e = seg::sim::estimate_h200(tiny);
  CHECK(e.fp32_us == doctest::Approx(2000.0));
  CHECK(std::string(e.bound) == "FP32");

  // Shared memory: one wavefront per SM and clock; 132 x 1.98e9 wavefronts take one second.
  RooflineInput smem;
  smem.blocks = 132;
  smem.threads_per_block = 256;
  smem.shared_wavefronts = 132ull * 1'980'000;  // 1 ms
  e = seg::sim::estimate_h200(smem);
  CHECK(e.shared_us == doctest::Approx(1000.0));
  CHECK(e.estimate_us == doctest::Approx(1000.0));
  CHECK(std::string(e.bound) == "shared memory");
}
