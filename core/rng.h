// Random numbers for every purpose in segtrain, from Philox4x32-10 (kernels/common/philox.h).
//
// Each purpose has its own fixed key (derived from the user seed and the purpose), so drawing more
// dropout masks never shifts the augmentation stream, and a data-order draw for iteration i depends
// only on (seed, i) (DESIGN decision 11). The 128-bit counter is (index within the stream [64 bit],
// stream id [64 bit]): a layer, a sample or an iteration picks its stream id, then draws in order.
#pragma once

#include <cstdint>

#include "kernels/common/philox.h"

namespace seg {

enum class RngPurpose : uint32_t {
  init = 1,          // parameter initialisation
  dropout = 2,       // Dropout2d masks
  augment = 3,       // flips and scale choices in the data pipeline
  data_order = 4,    // the sampler's shuffles
  data_synth = 5,    // the synthetic dataset generator
  test = 6,          // tests
};

PhiloxKey philox_key(uint64_t seed, RngPurpose purpose);

// The random state of the calling thread (a rank of a multi-GPU run is a thread): a seed and, per purpose, the next unused stream id. Ops that draw
// fresh randomness on every call (Dropout2d) take next_stream(); a train-state checkpoint saves
// state() so a resumed run draws the same masks as an uninterrupted one.
struct RngState {
  uint64_t seed = 304;  // upstream TRAIN.seed
  uint64_t next_stream[8] = {};
};
RngState& global_rng();
PhiloxKey global_key(RngPurpose purpose);        // philox_key(global_rng().seed, purpose)
uint64_t next_stream(RngPurpose purpose);        // returns the next stream id and advances it
void reset_global_rng(uint64_t seed);            // new seed, all counters back to 0

// A sequential stream: (seed, purpose, stream id) -> an endless sequence of 32-bit words.
class PhiloxStream {
 public:
  PhiloxStream(uint64_t seed, RngPurpose purpose, uint64_t stream = 0);

  uint32_t next_u32();
  uint64_t next_u64();
  float uniform();                      // [0, 1), 24 random bits
  double uniform_f64();                 // [0, 1), 53 random bits
  float normal();                       // standard normal (Box-Muller)
  uint32_t below(uint32_t n);           // uniform integer in [0, n), no modulo bias
  int64_t position() const { return static_cast<int64_t>(block_ * 4 + lane_); }

 private:
  void refill();
  PhiloxKey key_;
  uint64_t stream_;
  uint64_t block_ = 0;  // counter of the current 4-word block
  uint32_t words_[4] = {};
  int lane_ = 4;        // next word in words_ (4 = empty)
  bool have_spare_normal_ = false;
  float spare_normal_ = 0.0f;
};

}  // namespace seg
