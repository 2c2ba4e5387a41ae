// Helpers of the CUDA backend tests (tests/cuda): the device under test and the simulator schedules.
//
// The same sources build against the simulated variants (label sim: cuda:0 is kernels/sim's
// simulated sm_90 GPU) and against the nvcc build (label gpu, SEG_TEST_ON_GPU: a real GPU).
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"

#ifndef SEG_TEST_ON_GPU
#include "kernels/sim/sim.h"
#endif

namespace seg::test {

inline Device cuda0() { return Device::cuda(0); }

// A schedule of the simulator (round-robin, two random seeds); on a GPU only its own.
struct Schedule {
  std::string name;
#ifndef SEG_TEST_ON_GPU
  sim::Options options;
#endif
};
// Round-robin and two random schedules in the simulator (issue 14's three); the GPU itself elsewhere.
std::vector<Schedule> schedules();
// Round-robin only: for the model steps, where a sweep would be slow.
std::vector<Schedule> schedule_rr();

class ScopedSchedule {
 public:
  explicit ScopedSchedule(const Schedule& s);
  ~ScopedSchedule();
  ScopedSchedule(const ScopedSchedule&) = delete;
  ScopedSchedule& operator=(const ScopedSchedule&) = delete;

 private:
#ifndef SEG_TEST_ON_GPU
  std::unique_ptr<sim::ScopedOptions> scoped_;
#endif
};

// Whether this binary runs on the simulator.
constexpr bool simulated() {
#ifdef SEG_TEST_ON_GPU
  return false;
#else
  return true;
#endif
}

}  // namespace seg::test
