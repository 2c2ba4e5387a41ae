#include "core/rng.h"

#include <cmath>

namespace seg {

namespace {
// SplitMix64 finaliser: spreads seed and purpose over all key bits, so seeds 1 and 2 give unrelated keys.
uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

PhiloxKey philox_key(uint64_t seed, RngPurpose purpose) {
  const uint64_t k = mix64(seed ^ (static_cast<uint64_t>(purpose) << 56) ^ mix64(static_cast<uint64_t>(purpose)));
  return PhiloxKey{{static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)}};
}

// One per thread: the ranks of `--gpus 0-1` are threads of one process, and each draws its own
// masks exactly as a rank in its own process would (and none races another's counters).
RngState& global_rng() {
  thread_local RngState state;
  return state;
}

PhiloxKey global_key(RngPurpose purpose) { return philox_key(global_rng().seed, purpose); }

uint64_t next_stream(RngPurpose purpose) { return global_rng().next_stream[static_cast<uint32_t>(purpose) & 7]++; }

void reset_global_rng(uint64_t seed) { global_rng() = RngState{seed, {}}; }

PhiloxStream::PhiloxStream(uint64_t seed, RngPurpose purpose, uint64_t stream)
    : key_(philox_key(seed, purpose)), stream_(stream) {}

void PhiloxStream::refill() {
  const PhiloxCounter ctr{{static_cast<uint32_t>(block_), static_cast<uint32_t>(block_ >> 32),
                           static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)}};
  const PhiloxCounter out = philox4x32_10(ctr, key_);
  for (int i = 0; i < 4; ++i) words_[i] = out.c[i];
  ++block_;
  lane_ = 0;
}

uint32_t PhiloxStream::next_u32() {
  if (lane_ == 4) refill();
  return words_[lane_++];
}

uint64_t PhiloxStream::next_u64() {
  const uint64_t hi = next_u32();
  return (hi << 32) | next_u32();
}

float PhiloxStream::uniform() { return philox_uniform(next_u32()); }

double PhiloxStream::uniform_f64() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

float PhiloxStream::normal() {
  if (have_spare_normal_) {
    have_spare_normal_ = false;
    return spare_normal_;
  }
  // Box-Muller on (0, 1] x [0, 1): u1 never 0, so log is finite.
  const double u1 = 1.0 - uniform_f64();
  const double u2 = uniform_f64();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double angle = 6.283185307179586 * u2;
  spare_normal_ = static_cast<float>(r * std::sin(angle));
  have_spare_normal_ = true;
  return static_cast<float>(r * std::cos(angle));
}

uint32_t PhiloxStream::below(uint32_t n) {
  if (n <= 1) return 0;
  // Lemire's multiply-shift with rejection: unbiased for every n.
  uint64_t m = static_cast<uint64_t>(next_u32()) * n;
  uint32_t low = static_cast<uint32_t>(m);
  if (low < n) {
    const uint32_t threshold = static_cast<uint32_t>(-n) % n;
    while (low < threshold) {
      m = static_cast<uint64_t>(next_u32()) * n;
      low = static_cast<uint32_t>(m);
    }
  }
  return static_cast<uint32_t>(m >> 32);
}

}  // namespace seg
