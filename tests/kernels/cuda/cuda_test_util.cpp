#include "tests/kernels/cuda/cuda_test_util.h"

#include "kernels/common/philox.h"

#ifdef SEG_TEST_ON_GPU
// The GPU variant runs only where a device answers; elsewhere main() exits 77 (skipped).
std::string seg_test_skip_reason() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return "no CUDA device found";
  return "";
}
#endif

namespace seg::test {

std::vector<CudaConfig> cuda_configs() {
#ifdef SEG_TEST_ON_GPU
  return {CudaConfig{"gpu"}};
#else
  auto with = [](sim::Schedule s, uint64_t seed, int workers) {
    sim::Options o;
    o.schedule = s;
    o.seed = seed;
    o.workers = workers;
    return o;
  };
  return {
      {"rr", with(sim::Schedule::round_robin, 1, 1)},
      {"reverse", with(sim::Schedule::reverse, 1, 1)},
      {"random seed 1", with(sim::Schedule::random, 1, 1)},
      {"random seed 2", with(sim::Schedule::random, 2, 1)},
      {"rr, 2 workers", with(sim::Schedule::round_robin, 1, 2)},
  };
#endif
}

std::vector<CudaConfig> cuda_config_rr() { return {cuda_configs().front()}; }

ScopedConfig::ScopedConfig(const CudaConfig& c) {
#ifndef SEG_TEST_ON_GPU
  scoped_ = std::make_unique<sim::ScopedOptions>(c.options);
#else
  (void)c;
#endif
}
ScopedConfig::~ScopedConfig() = default;

std::vector<float> random_floats(size_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  const PhiloxKey key{{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32) ^ 0x7e57u}};
  for (size_t i = 0; i < n; i += 4) {
    const PhiloxCounter r = philox4x32_10(PhiloxCounter{{static_cast<uint32_t>(i), 0, 0, 0}}, key);
    for (size_t j = 0; j < 4 && i + j < n; ++j) v[i + j] = lo + (hi - lo) * static_cast<float>(r.c[j] >> 8) * (1.0f / 16777216.0f);
  }
  return v;
}

}  // namespace seg::test
