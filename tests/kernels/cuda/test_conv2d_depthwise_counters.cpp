// The simulator's counters of the depthwise convolution's forward and backward-data kernels
// (kernels/cuda/conv2d_depthwise.cu) with the weights staged tap-major in shared memory, against
// the same kernels reading w ([C][taps]) as before 2026-12-07 (set_depthwise_weight_staging(false)).
// Read from w, a tap's weights for a thread's 8 channels are 8 separate 2-byte loads 18 bytes
// apart, and across a warp's 32 consecutive channel packs 144 bytes apart: each of those loads
// touches 32 sectors for 64 bytes. The first H200 run measured these kernels about 10x under the
// DRAM bound. (The simulator counts the accesses g++ emits, which splits the 16-byte activation
// loads into elements, so the activations' own sector counts are not nvcc's; the comparison is
// between two runs that share them.) Results are checked against the CPU by test_conv2d.cpp.
#include <doctest/doctest.h>

#include <string>

#include "tests/common/requirement.h"

#ifndef SEG_TEST_ON_GPU
#define SEG_DEPTHWISE_COUNTERS_BUILT 1
#include "kernels/common/conv_shape.h"
#include "kernels/cuda/conv2d_paths.h"
#include "kernels/sim/counters.h"
#include "tests/kernels/cuda/sim_counters.h"
#include "tests/kernels/cuda/tc_test_util.h"
#endif

namespace {
std::string depthwise_counters_missing() {
#ifdef SEG_DEPTHWISE_COUNTERS_BUILT
  return seg::sim::counters_available() ? "" : "the simulator counts nothing in this build (sanitizers)";
#else
  return "simulator counters: the GPU build has none";
#endif
}
}  // namespace
SEG_TEST_REQUIREMENT(depthwise_counters, [] { return depthwise_counters_missing(); });

#ifdef SEG_DEPTHWISE_COUNTERS_BUILT

namespace {

using seg::f16;

// The counters of the one kernel `launch` runs, round-robin schedule.
template <class Launch>
seg::sim::KernelCounters counters_of(const std::string& what, Launch launch) {
  const auto all = seg::test::kernel_counters_of(launch);
  REQUIRE_MESSAGE(all.size() == 1, what << ": " << all.size() << " kernels, expected one");
  return all.front();
}

}  // namespace

TEST_CASE("depthwise counters: staged weights cut the global sectors the weights cost, same results" *
          SEG_REQUIRES(depthwise_counters)) {
  // 3x3, dilation 2, 256 channels (32 packs of 8 halves: one warp per pixel), 2 x 6 x 6.
  seg::ConvShape s;
  s.N = 2;
  s.H = s.W = 6;
  s.C = s.O = s.groups = 256;
  s.KH = s.KW = 3;
  s.pad_h = s.pad_w = 2;
  s.dil_h = s.dil_w = 2;
  seg::test::DeviceBuffer<f16> x(seg::test::tc_inputs<f16>(static_cast<size_t>(s.x_numel()), 3, false));
  seg::test::DeviceBuffer<f16> w(seg::test::tc_inputs<f16>(static_cast<size_t>(s.w_numel()), 4, false));
  seg::test::DeviceBuffer<f16> dy(seg::test::tc_inputs<f16>(static_cast<size_t>(s.y_numel()), 5, false));
  seg::test::DeviceBuffer<f16> staged_out(static_cast<size_t>(s.x_numel())), plain_out(static_cast<size_t>(s.x_numel()));
  struct Restore {
    ~Restore() { seg::cuda::detail::set_depthwise_weight_staging(true); }
  } restore;
  for (const bool forward : {true, false}) {
    auto run = [&](f16* out) {
      if (forward)
        seg::cuda::detail::conv2d_forward_depthwise<f16>(s, x.get(), w.get(), nullptr, out, nullptr);
      else
        seg::cuda::detail::conv2d_backward_data_depthwise<f16>(s, w.get(), dy.get(), out, nullptr);
    };
    const std::string what = forward ? "forward" : "backward data";
    seg::cuda::detail::set_depthwise_weight_staging(true);
    const auto staged = counters_of(what, [&] { run(staged_out.get()); });
    seg::cuda::detail::set_depthwise_weight_staging(false);
    const auto plain = counters_of(what, [&] { run(plain_out.get()); });
    INFO(what << ", staged: " << seg::sim::format_counters(staged));
    INFO(what << ", weights from w: " << seg::sim::format_counters(plain));
    // The weights leave global memory: the staged kernel reads them from shared memory and moves
    // under half the sectors (measured: see the message), the plain one never touches shared memory.
    CHECK(staged.shared_load.requests > 0);
    CHECK(plain.shared_load.requests == 0);
    // The staged weights are read as 16-byte quads, a warp's 32 lanes on consecutive chunks: 4
    // wavefronts (512 bytes) per request at most, no bank conflict beyond that. Pack-major [tap][C]
    // (each lane's two quads side by side, lanes 32 bytes apart) measured 8.
    CHECK(staged.shared_load.sectors <= 4 * staged.shared_load.requests);
    CHECK(2 * staged.global_load.sectors < plain.global_load.sectors);
    MESSAGE(what << ": global load sectors " << staged.global_load.sectors << " staged, " << plain.global_load.sectors
                 << " reading w");
    // The same f32 weights in the same order: the same bits.
    const auto a = staged_out.download(), b = plain_out.download();
    for (size_t i = 0; i < a.size(); ++i) REQUIRE_MESSAGE(a[i].bits == b[i].bits, what << " element " << i);
  }
}

#endif  // SEG_DEPTHWISE_COUNTERS_BUILT
