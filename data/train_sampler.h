// TrainSampler: decides, on the main thread, what every training iteration contains (DESIGN
// decision 11): which samples, which short side, which flips. Loader workers only execute the plans,
// so the data a run sees never depends on the number of workers or on timing.
//
// Sample order, following upstream's _get_sub_batch (spec/upstream.md section 2.3):
//   walk a shuffled list; put each record in bucket "portrait" (height > width) or "landscape";
//   the first bucket to reach batch_size_per_gpu becomes the next sub-batch and is emptied;
//   leftovers wait for later sub-batches; at the end of the list, reshuffle and go on.
// Randomness (Philox, core/rng.h):
//   the shuffle of pass p        PhiloxStream(seed, data_order, stream p)
//   short sides and flips of     PhiloxStream(seed, augment, stream iteration): per sub-batch in GPU
//   iteration i                  order, one imgSizes pick, then one flip bit per sample
//                                (always 0 when DATASET.random_flip is false).
// Deviation from upstream: one sampler instead of a shuffled copy of the list per DataLoader worker
// seeded with np.random.seed(index) (DESIGN decision 12).
//
// A checkpoint needs only the iteration: seek(i) replays the (cheap, decode-free) sample walk.
#pragma once

#include <cstdint>
#include <vector>

#include "data/options.h"
#include "data/train_dataset.h"

namespace seg::data {

class TrainSampler {
 public:
  TrainSampler(const TrainDataset& dataset);

  // The plans of the next iteration, one per GPU (options.num_gpus).
  std::vector<SubBatchPlan> next();
  // Positions the sampler so that next() returns iteration `iteration` (replays from 0).
  void seek(int64_t iteration);
  int64_t iteration() const { return iteration_; }

 private:
  void reset();
  void start_pass();
  std::vector<int64_t> next_samples();

  DatasetOptions options_;
  std::vector<uint8_t> portrait_;  // per list record
  std::vector<int64_t> order_;     // the current pass's permutation
  size_t cursor_ = 0;
  uint64_t pass_ = 0;
  std::vector<int64_t> buckets_[2];  // 0: portrait, 1: landscape (upstream's numbering)
  int64_t iteration_ = 0;
};

}  // namespace seg::data
