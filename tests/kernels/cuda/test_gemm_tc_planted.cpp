// Planted bugs in the tensor-core GEMM (tests/sim's broken-kernel approach applied to the product
// kernel): each variant differs from the product kernel by one line (Plant in block_tile.h), and
// the checks this suite uses for every kernel must catch it. A missing barrier shows only under
// some schedules, so "caught" means: wrong results under at least one of the configurations the
// suites run; the product kernel is right under all of them.
#include <doctest/doctest.h>

#ifndef SEG_TEST_ON_GPU

#include <string>
#include <vector>

#include "tests/kernels/cuda/planted_gemm.h"
#include "tests/kernels/cuda/tc_test_util.h"

namespace {

using seg::f16;
using seg::test::PlantedBug;
using seg::test::PlantedLoop;

// Each case runs on both main loops of block_tile.h: the bug must be caught in either.
const PlantedLoop kLoops[] = {PlantedLoop::barrier_first, PlantedLoop::prefetch_fragments};
const char* loop_name(PlantedLoop l) { return l == PlantedLoop::barrier_first ? "barrier_first" : "prefetch_fragments"; }

// The number of configurations under which the variant's output differs from the reference.
int wrong_under(PlantedBug bug, PlantedLoop loop, std::string& log) {
  const int M = 72, N = 64, K = 160;  // 5 K tiles: the 3-stage pipeline wraps around
  const auto A = seg::test::tc_inputs<f16>(static_cast<size_t>(M) * K, 1, true);
  const auto B = seg::test::tc_inputs<f16>(static_cast<size_t>(K) * N, 2, true);
  std::vector<double> ref, abs_sum;
  seg::test::reference_gemm(false, false, M, N, K, A, K, B, N, ref, abs_sum);
  seg::test::DeviceBuffer<f16> dA(A), dB(B);
  int wrong = 0;
  for (const auto& cfg : seg::test::cuda_configs()) {
    seg::test::ScopedConfig scoped(cfg);
    seg::test::DeviceBuffer<float> dC(static_cast<size_t>(M) * N);
    seg::test::planted_gemm(bug, loop, M, N, K, dA.get(), dB.get(), dC.get());
    const auto c = seg::test::compare(dC.download(), ref, seg::test::Tolerance{0, 0});
    log += cfg.name + ": " + (c.ok() ? "correct" : "WRONG (" + std::to_string(c.mismatches) + " elements)") + "; ";
    wrong += c.ok() ? 0 : 1;
  }
  return wrong;
}

}  // namespace

TEST_CASE("gemm_tc planted bugs: the product kernel is right under every schedule") {
  for (PlantedLoop loop : kLoops) {
    std::string log = std::string(loop_name(loop)) + ": ";
    CHECK_MESSAGE(wrong_under(PlantedBug::none, loop, log) == 0, log);
  }
}

TEST_CASE("gemm_tc planted bugs: a missing barrier after cp.async.wait_group is caught") {
  for (PlantedLoop loop : kLoops) {
    std::string log = std::string(loop_name(loop)) + ": ";
    CHECK_MESSAGE(wrong_under(PlantedBug::no_barrier_after_wait, loop, log) > 0, log);
    MESSAGE("no_barrier_after_wait, " << log);
  }
}

TEST_CASE("gemm_tc planted bugs: waiting one cp.async group short is caught") {
  for (PlantedLoop loop : kLoops) {
    std::string log = std::string(loop_name(loop)) + ": ";
    CHECK_MESSAGE(wrong_under(PlantedBug::wait_one_group_short, loop, log) == 5, log);
  }
}

TEST_CASE("gemm_tc planted bugs: a swizzle that writes and reads disagree is caught") {
  for (PlantedLoop loop : kLoops) {
    std::string log = std::string(loop_name(loop)) + ": ";
    CHECK_MESSAGE(wrong_under(PlantedBug::swizzle_mismatch, loop, log) == 5, log);
  }
}

#else

TEST_CASE("gemm_tc planted bugs: simulator only" * doctest::skip()) {}

#endif
