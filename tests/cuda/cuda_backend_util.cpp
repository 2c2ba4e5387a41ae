#include "tests/cuda/cuda_backend_util.h"

#ifdef SEG_TEST_ON_GPU
// The GPU variant runs only where a device answers; elsewhere main() exits 77 (skipped).
std::string seg_test_skip_reason() {
  if (seg::cuda_device_count() == 0) return "no CUDA device found";
  return "";
}
#endif

namespace seg::test {

std::vector<Schedule> schedules() {
#ifdef SEG_TEST_ON_GPU
  return {Schedule{"gpu"}};
#else
  auto with = [](sim::Schedule s, uint64_t seed) {
    sim::Options o;
    o.schedule = s;
    o.seed = seed;
    return o;
  };
  return {{"rr", with(sim::Schedule::round_robin, 1)},
          {"random seed 1", with(sim::Schedule::random, 1)},
          {"random seed 2", with(sim::Schedule::random, 2)}};
#endif
}

std::vector<Schedule> schedule_rr() { return {schedules().front()}; }

ScopedSchedule::ScopedSchedule(const Schedule& s) {
#ifndef SEG_TEST_ON_GPU
  scoped_ = std::make_unique<sim::ScopedOptions>(s.options);
#else
  (void)s;
#endif
}
ScopedSchedule::~ScopedSchedule() = default;

}  // namespace seg::test
