// The simulator's counters of the tensor-core kernels, asserted rather than only printed by the lab
// (docs/tensor-cores.md, sections 3 and 4): the GEMM with mma.sync and swizzled tiles (lab v7, the
// block kernel with the 128x128 tile, v8, the product launcher, and v12, v13, the prefetch_fragments
// main loop with 32- and 64-deep K tiles) and the convolution's best version
// (lab v3, the product, every direction, f16 and TF32), on small shapes whose tiles are all full. The kernels are
// the lab's (kernels/lab/gemm_tc_lab.cu, conv_tc_lab.cu), linked into this suite's default build.
//
// What is asserted, for the tensor-core block kernel of each run (the launches that issue MMAs; the
// split-K reduction is a different kernel):
//   * shared-memory bank conflicts: 0 over the whole kernel, loads and stores. The counters are per
//     launch, so the main loop (ldmatrix reads of the swizzled tiles) cannot be counted apart from
//     the epilogue (accumulator staging stores and loads); 0 for the whole kernel includes it. A
//     control run of the unswizzled version on the same shape (v6, v2) must count conflicts, or a
//     counter that never counts would pass.
//   * global loads: these kernels' only global loads are the 16-byte cp.async copies of A and B
//     (no bias, beta = 0). A request is one warp-level instruction with its active lanes
//     (kernels/sim/counters.h), so a warp's 16-byte loads ask for 32 x 16 = 512 bytes, 16 sectors of
//     32 bytes: 16 sectors per request, every byte of every sector used, is the ideal, and full
//     tiles reach it. (Four sectors per request is the ideal of a warp's 4-byte loads, 128 bytes;
//     for 16-byte loads 4 would be the count per quarter-warp, 8 lanes x 16 bytes, not per request.)
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/common/requirement.h"

#if defined(SEG_TEST_LAB_KERNELS) && !defined(SEG_TEST_ON_GPU)
#define SEG_TC_COUNTERS_BUILT 1
#include "kernels/cuda/conv2d_tc.h"
#include "kernels/lab/tc_lab.h"
#include "kernels/sim/counters.h"
#include "tests/kernels/cuda/sim_counters.h"
#include "tests/kernels/cuda/tc_test_util.h"
#endif

namespace {
std::string tc_counters_missing() {
#ifdef SEG_TC_COUNTERS_BUILT
  return seg::sim::counters_available() ? "" : "the simulator counts nothing in this build (sanitizers)";
#elif defined(SEG_TEST_ON_GPU)
  return "simulator counters: the GPU build has none";
#else
  return "the kernel lab's kernels are not linked into this build (sanitizer builds leave them out)";
#endif
}
}  // namespace
SEG_TEST_REQUIREMENT(tc_counters, [] { return tc_counters_missing(); });

#ifdef SEG_TC_COUNTERS_BUILT

namespace {

using seg::f16;

// The counters of the block kernel (the launches with MMAs) of whatever `launch` runs, round-robin.
template <class Launch>
seg::sim::KernelCounters block_kernel_counters(const std::string& what, Launch launch) {
  bool launched = false;
  const auto all = seg::test::kernel_counters_of([&] { launched = static_cast<bool>(launch()); });
  REQUIRE_MESSAGE(launched, what << ": not in this build");
  seg::sim::KernelCounters found;
  int with_mma = 0;
  for (const auto& k : all)
    if (k.mma_instructions > 0) {
      found = k;
      ++with_mma;
    }
  REQUIRE_MESSAGE(with_mma == 1, what << ": " << with_mma << " kernels issued MMAs, expected the one block kernel");
  return found;
}

void check_conflict_free(const std::string& what, const seg::sim::KernelCounters& k) {
  INFO(what << ": " << seg::sim::format_counters(k));
  CHECK(k.shared_load.requests > 0);
  CHECK(k.shared_load.bank_conflicts == 0);
  CHECK(k.shared_store.bank_conflicts == 0);
}

void check_16_sectors_per_request(const std::string& what, const seg::sim::KernelCounters& k) {
  INFO(what << ": " << seg::sim::format_counters(k));
  REQUIRE(k.global_load.requests > 0);
  CHECK(k.global_load.bytes == 512 * k.global_load.requests);    // 32 lanes x 16 bytes each
  CHECK(k.global_load.sectors == 16 * k.global_load.requests);   // 16 sectors per request
  CHECK(k.global_load.bytes == 32 * k.global_load.sectors);      // no byte of a sector wasted
}

struct GemmInputs {
  static constexpr int M = 256, N = 256, K = 256;  // the lab's first shape: 2 x 2 tiles of 128, 8 K tiles
  seg::test::DeviceBuffer<f16> a{seg::test::tc_inputs<f16>(static_cast<size_t>(M) * K, 1, true)};
  seg::test::DeviceBuffer<f16> b{seg::test::tc_inputs<f16>(static_cast<size_t>(K) * N, 2, true)};
  seg::test::DeviceBuffer<float> c{static_cast<size_t>(M) * N};
  seg::test::DeviceBuffer<unsigned char> ws{seg::lab::gemm_workspace_bytes(M, N, K)};
  seg::lab::GemmProblem problem() {
    return {M, N, K, a.get(), b.get(), c.get(), ws.get(), ws.size()};
  }
};

}  // namespace

TEST_CASE("tc counters: the mma.sync GEMM with swizzled tiles has no bank conflicts and 16 sectors per request" *
          SEG_REQUIRES(tc_counters)) {
  GemmInputs in;
  for (const int v : {7, 8, 12, 13}) {  // 12, 13: the prefetch_fragments main loop
    const std::string what = "GEMM v" + std::to_string(v) + " " + std::to_string(GemmInputs::M) + "x" +
                             std::to_string(GemmInputs::N) + "x" + std::to_string(GemmInputs::K);
    const auto k = block_kernel_counters(what, [&] { return seg::lab::run_gemm_version(v, in.problem(), nullptr); });
    check_conflict_free(what, k);
    check_16_sectors_per_request(what, k);
  }
  // The control: v6 is v7 without the swizzle (plain 64-byte rows: ldmatrix's 8 rows collide).
  const auto plain = block_kernel_counters("GEMM v6", [&] { return seg::lab::run_gemm_version(6, in.problem(), nullptr); });
  INFO(seg::sim::format_counters(plain));
  CHECK(plain.shared_load.bank_conflicts > 0);
}

TEST_CASE("tc counters: the product convolution has no bank conflicts and 16 sectors per request, every direction" *
          SEG_REQUIRES(tc_counters)) {
  // A 1x1 convolution, 2 x 8 x 8 pixels, 64 -> 64 channels: every GEMM (forward 128 x 64 x 64,
  // backward data 128 x 64 x 64, backward weight 64 x 64 x 128) fills its tiles, and every
  // 16-byte chunk is 8 channels of one pixel (no zero-filled taps at the border).
  seg::ConvShape s;
  s.N = 2;
  s.H = s.W = 8;
  s.C = s.O = 64;
  s.KH = s.KW = 1;
  seg::test::DeviceBuffer<f16> x(seg::test::tc_inputs<f16>(static_cast<size_t>(s.x_numel()), 3, true));
  seg::test::DeviceBuffer<f16> w(seg::test::tc_inputs<f16>(static_cast<size_t>(s.w_numel()), 4, true));
  seg::test::DeviceBuffer<f16> dy(seg::test::tc_inputs<f16>(static_cast<size_t>(s.y_numel()), 5, true));
  seg::test::DeviceBuffer<f16> out(static_cast<size_t>(s.x_numel()));  // x, y and dw have 8192, 8192, 4096
  seg::test::DeviceBuffer<unsigned char> ws(seg::lab::conv_workspace_bytes(s, seg::lab::ConvType::f16));
  using seg::lab::ConvDir;
  for (const ConvDir d : {ConvDir::forward, ConvDir::backward_data, ConvDir::backward_weight}) {
    const seg::lab::ConvProblem p{s, d, seg::lab::ConvType::f16, x.get(), w.get(), dy.get(), out.get(), ws.get(), ws.size()};
    const std::string what = std::string("conv v3 1x1 64->64 ") + seg::lab::conv_dir_name(d);
    const auto k = block_kernel_counters(what, [&] { return seg::lab::run_conv_version(3, p, nullptr); });
    check_conflict_free(what, k);
    check_16_sectors_per_request(what, k);
    // The control: v2, the same implicit GEMM with one unswizzled stage.
    const auto plain = block_kernel_counters("conv v2", [&] { return seg::lab::run_conv_version(2, p, nullptr); });
    INFO(what << " v2: " << seg::sim::format_counters(plain));
    CHECK(plain.shared_load.bank_conflicts > 0);
  }
}

// TF32 (O0's convolutions) on mma.sync m16n8k8: the fragments come from SmemKind::skewed tiles
// (tile_config.h), K-contiguous ones swizzled and read with ldmatrix, MN-contiguous ones padded and
// read one float per lane, and the loader rounds its own chunks to TF32 in place with 16-byte
// accesses. The same 1x1 convolution in f32, both tiles, every direction: 0 conflicts, the BK 8
// backward tile's rows of two chunks included (padded by one chunk until 2026-12-07, its 16-byte
// accesses were 2-way conflicted there). The control is v9, the same convolution on TF32 WMMA's
// padded tiles: the rounding pass's 16-byte accesses to rows of 4 chunks padded to 5 conflict.
TEST_CASE("tc counters: TF32 on mma.sync has no bank conflicts where its tiles say so" * SEG_REQUIRES(tc_counters)) {
  seg::ConvShape s;
  s.N = 2;
  s.H = s.W = 8;
  s.C = s.O = 64;
  s.KH = s.KW = 1;
  seg::test::DeviceBuffer<float> x(seg::test::tc_inputs<float>(static_cast<size_t>(s.x_numel()), 3, true));
  seg::test::DeviceBuffer<float> w(seg::test::tc_inputs<float>(static_cast<size_t>(s.w_numel()), 4, true));
  seg::test::DeviceBuffer<float> dy(seg::test::tc_inputs<float>(static_cast<size_t>(s.y_numel()), 5, true));
  seg::test::DeviceBuffer<float> out(static_cast<size_t>(s.x_numel()));
  seg::test::DeviceBuffer<unsigned char> ws(seg::lab::conv_workspace_bytes(s, seg::lab::ConvType::f32));
  using seg::lab::ConvDir;
  for (const seg::cuda::TcTile tile : {seg::cuda::TcTile::small, seg::cuda::TcTile::large})
    for (const ConvDir d : {ConvDir::forward, ConvDir::backward_data, ConvDir::backward_weight}) {
      const seg::lab::ConvProblem p{
          s, d, seg::lab::ConvType::f32, x.get(), w.get(), dy.get(), out.get(), ws.get(), ws.size(), tile};
      const bool large = tile == seg::cuda::TcTile::large;
      const std::string what = std::string("f32 conv v3 1x1 64->64 ") + seg::lab::conv_dir_name(d) +
                               (large ? " large" : " small");
      const auto k = block_kernel_counters(what, [&] { return seg::lab::run_conv_version(3, p, nullptr); });
      INFO(what << ": " << seg::sim::format_counters(k));
      CHECK(k.mma_instructions > 0);
      check_conflict_free(what, k);  // the BK 8 backward tile too: rows of two chunks, swizzled
      if (d == ConvDir::forward) {
        const auto wmma = block_kernel_counters("f32 conv v9", [&] { return seg::lab::run_conv_version(9, p, nullptr); });
        INFO(what << " v9: " << seg::sim::format_counters(wmma));
        CHECK(wmma.shared_load.bank_conflicts > 0);
      }
    }
}

TEST_CASE("tc counters: backward weight of a 3-channel input pads the channels and copies 16 bytes at a time" *
          SEG_REQUIRES(tc_counters)) {
  // The first convolution's shape, small: 3x3 stride 2 on 2 x 16 x 16 x 3, 16 filters. With the
  // workspace conv2d_backward_weight_tc_workspace_bytes asks for, x is padded to 8 channels and the
  // GEMM's loads are 16-byte copies; with only the split-K partials' workspace it takes the
  // element-wise path (2-byte loads). Integer inputs: both results are exact, so they are equal.
  seg::ConvShape s;
  s.N = 2;
  s.H = s.W = 16;
  s.C = 3;
  s.O = 16;
  s.KH = s.KW = 3;
  s.stride_h = s.stride_w = 2;
  s.pad_h = s.pad_w = 1;
  seg::test::DeviceBuffer<f16> x(seg::test::tc_inputs<f16>(static_cast<size_t>(s.x_numel()), 3, true));
  seg::test::DeviceBuffer<f16> dy(seg::test::tc_inputs<f16>(static_cast<size_t>(s.y_numel()), 5, true));
  seg::test::DeviceBuffer<f16> padded_dw(static_cast<size_t>(s.w_numel())), plain_dw(static_cast<size_t>(s.w_numel()));
  const size_t full = seg::cuda::conv2d_backward_weight_tc_workspace_bytes<f16>(s, {});
  // x padded to 8 channels, in f16, is part of it.
  REQUIRE(full >= static_cast<size_t>(s.N * s.H * s.W * 8 * 2));
  seg::test::DeviceBuffer<unsigned char> ws(full);
  seg::cuda::ConvTcArgs args;
  args.workspace = seg::cuda::TcWorkspace{ws.get(), full};
  const auto padded = block_kernel_counters("padded", [&] {
    seg::cuda::conv2d_backward_weight_tc<f16>(s, x.get(), dy.get(), padded_dw.get(), nullptr, nullptr, args);
    return true;
  });
  args.workspace = seg::cuda::TcWorkspace{ws.get(), full / 2};  // too small for the padded copy of x
  REQUIRE(full / 2 < static_cast<size_t>(s.N * s.H * s.W * 8 * 2));
  const auto plain = block_kernel_counters("element-wise", [&] {
    seg::cuda::conv2d_backward_weight_tc<f16>(s, x.get(), dy.get(), plain_dw.get(), nullptr, nullptr, args);
    return true;
  });
  INFO("padded: " << seg::sim::format_counters(padded));
  INFO("element-wise: " << seg::sim::format_counters(plain));
  // 16-byte copies use nearly every byte of the sectors they move and ask for many bytes per
  // request; the element path's 2-byte loads of B (a pixel's 3 channels, then the next tap's) leave
  // most of each sector unused (the control: measured 98% against 19% here, and 196 against 36
  // bytes per request).
  const auto& pl = padded.global_load;
  const auto& el = plain.global_load;
  CHECK(pl.bytes * 10 >= 9 * 32 * pl.sectors);
  CHECK(el.bytes * 2 < 32 * el.sectors);
  CHECK(pl.bytes * el.requests >= 4 * el.bytes * pl.requests);
  const auto a = padded_dw.download(), b = plain_dw.download();
  for (size_t i = 0; i < a.size(); ++i) REQUIRE_MESSAGE(a[i].bits == b[i].bits, "element " << i);
}

TEST_CASE("tc counters: strided backward data runs one GEMM per stride phase, over only the taps that reach it" *
          SEG_REQUIRES(tc_counters)) {
  // Backward data of a stride-2 convolution, with and without the stride phases (ConvTcArgs::
  // stride_phases; gemm/conv2d_tc_impl.h, dgrad_covers). 3x3 pad 1: a pixel meets 1, 2 or 4 of the
  // 9 taps (2.25 on average), so the one GEMM over every (pixel, tap) pair issues about 4 times the
  // MMAs the four phase GEMMs need. 1x1: only even rows and columns meet the tap, one GEMM over a
  // quarter of the pixels and a fill of the rest. Integer inputs, so both ways are exact: equal bits.
  struct Case {
    const char* what;
    int64_t K, pad, O;
    int gemms;    // GEMM launches with the phases (the fill is not one)
    int at_least; // MMAs without the phases / with them: at least this
  };
  for (const Case& c : {Case{"3x3 stride 2 pad 1, 16->16", 3, 1, 16, 4, 4}, Case{"1x1 stride 2, 16->32", 1, 0, 32, 1, 4}}) {
    seg::ConvShape s;
    s.N = 2;
    s.H = s.W = 16;
    s.C = 16;
    s.O = c.O;
    s.KH = s.KW = c.K;
    s.stride_h = s.stride_w = 2;
    s.pad_h = s.pad_w = c.pad;
    seg::test::DeviceBuffer<f16> w(seg::test::tc_inputs<f16>(static_cast<size_t>(s.w_numel()), 4, true));
    seg::test::DeviceBuffer<f16> dy(seg::test::tc_inputs<f16>(static_cast<size_t>(s.y_numel()), 5, true));
    seg::test::DeviceBuffer<f16> phased_dx(static_cast<size_t>(s.x_numel())), plain_dx(static_cast<size_t>(s.x_numel()));
    seg::cuda::ConvTcArgs args;
    auto run = [&](bool phases, f16* dx) {
      args.stride_phases = phases;
      return seg::test::kernel_counters_of(
          [&] { seg::cuda::conv2d_backward_data_tc<f16>(s, w.get(), dy.get(), dx, nullptr, args); });
    };
    const auto phased = run(true, phased_dx.get()), plain = run(false, plain_dx.get());
    auto mma_of = [](const std::vector<seg::sim::KernelCounters>& all, int* launches) {
      int64_t mma = 0;
      *launches = 0;
      for (const auto& k : all)
        if (k.mma_instructions > 0) {
          mma += static_cast<int64_t>(k.mma_instructions);
          *launches += static_cast<int>(k.launches);
        }
      return mma;
    };
    int phased_launches = 0, plain_launches = 0;
    const int64_t phased_mma = mma_of(phased, &phased_launches), plain_mma = mma_of(plain, &plain_launches);
    const std::string what = c.what;
    INFO(what << ": MMAs " << phased_mma << " in " << phased_launches << " GEMM launches with the phases, "
                << plain_mma << " in " << plain_launches << " without");
    CHECK(plain_launches == 1);
    CHECK(phased_launches == c.gemms);
    CHECK(phased_mma * c.at_least <= plain_mma);
    const auto a = phased_dx.download(), b = plain_dx.download();
    for (size_t i = 0; i < a.size(); ++i) REQUIRE_MESSAGE(a[i].bits == b[i].bits, c.what << ": element " << i);
  }
}

#endif  // SEG_TC_COUNTERS_BUILT
