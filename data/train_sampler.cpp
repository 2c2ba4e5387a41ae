#include "data/train_sampler.h"

#include <numeric>
#include <utility>

#include "core/rng.h"

namespace seg::data {

TrainSampler::TrainSampler(const TrainDataset& dataset) : options_(dataset.options()) {
  portrait_.resize(dataset.size());
  for (size_t i = 0; i < dataset.size(); ++i) portrait_[i] = dataset.is_portrait(static_cast<int64_t>(i));
  reset();
}

void TrainSampler::reset() {
  pass_ = 0;
  buckets_[0].clear();
  buckets_[1].clear();
  iteration_ = 0;
  start_pass();
}

void TrainSampler::start_pass() {
  // Fisher-Yates shuffle of 0..n-1 from this pass's own stream.
  order_.resize(portrait_.size());
  std::iota(order_.begin(), order_.end(), 0);
  PhiloxStream rng(options_.seed, RngPurpose::data_order, pass_);
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(static_cast<uint32_t>(i))]);
  cursor_ = 0;
  ++pass_;
}

std::vector<int64_t> TrainSampler::next_samples() {
  const size_t batch = static_cast<size_t>(options_.batch_size_per_gpu);
  for (;;) {
    if (cursor_ == order_.size()) start_pass();
    const int64_t index = order_[cursor_++];
    std::vector<int64_t>& bucket = buckets_[portrait_[index] ? 0 : 1];
    bucket.push_back(index);
    if (bucket.size() == batch) return std::exchange(bucket, {});
  }
}

std::vector<SubBatchPlan> TrainSampler::next() {
  PhiloxStream rng(options_.seed, RngPurpose::augment, static_cast<uint64_t>(iteration_));
  std::vector<SubBatchPlan> plans(options_.num_gpus);
  for (int g = 0; g < options_.num_gpus; ++g) {
    SubBatchPlan& p = plans[g];
    p.iteration = iteration_;
    p.gpu = g;
    p.samples = next_samples();
    p.short_side = options_.imgSizes[rng.below(static_cast<uint32_t>(options_.imgSizes.size()))];
    for (size_t j = 0; j < p.samples.size(); ++j)
      p.flips.push_back(options_.random_flip ? static_cast<uint8_t>(rng.below(2)) : 0);
  }
  ++iteration_;
  return plans;
}

void TrainSampler::seek(int64_t iteration) {
  reset();
  // Only the sample walk has state; the augmentation draws depend on the iteration alone.
  for (int64_t i = 0; i < iteration; ++i)
    for (int g = 0; g < options_.num_gpus; ++g) next_samples();
  iteration_ = iteration;
}

}  // namespace seg::data
