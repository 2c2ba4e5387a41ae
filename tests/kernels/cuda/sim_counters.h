// The simulator's per-kernel counters of whatever a test launches (simulated builds only):
// counters on, the round-robin schedule, totals reset before and read after a device sync.
// Used by the counter suites (test_tc_counters.cpp, test_conv2d_depthwise_counters.cpp).
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <vector>

#include "kernels/sim/counters.h"
#include "tests/kernels/cuda/tc_test_util.h"

namespace seg::test {

template <class Launch>
std::vector<seg::sim::KernelCounters> kernel_counters_of(Launch launch) {
  seg::sim::Options o = cuda_config_rr().front().options;
  o.counters = true;
  seg::sim::ScopedOptions scoped(o);
  seg::sim::reset_kernel_counter_totals();
  launch();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  return seg::sim::kernel_counter_totals();
}

}  // namespace seg::test
