#include "data/train_loader.h"

#include <algorithm>

#include "core/error.h"
#include "core/profiler.h"

namespace seg::data {

namespace {
constexpr size_t kKeptBadSamples = 20;
}

int64_t TrainBatch::images() const {
  int64_t n = 0;
  for (const TrainSubBatch& s : sub_batches) n += s.batch_size();
  return n;
}

TrainLoader::TrainLoader(const TrainDataset& dataset, int64_t start_iteration)
    : dataset_(dataset), sampler_(dataset) {
  const DatasetOptions& o = dataset.options();
  sampler_.seek(start_iteration);
  // Never fewer in flight than one iteration's sub-batches, so next() can always complete.
  prefetch_ = std::max<int64_t>(o.prefetch_depth(), o.local_count());
  workers_ = std::make_unique<OrderedWorkers<SubBatchPlan, TrainSubBatch>>(
      o.workers, [this](const SubBatchPlan& plan) { return dataset_.load(plan); });
}

TrainLoader::~TrainLoader() = default;

int TrainLoader::workers() const { return workers_->num_workers(); }

void TrainLoader::top_up() {
  // Plans are drawn a whole iteration at a time, so the queue may exceed prefetch by num_gpus - 1.
  // A data-parallel rank draws every plan (the walk must be the same on all ranks) and decodes only
  // its own sub-batches.
  const DatasetOptions& o = dataset_.options();
  while (workers_->pending() < prefetch_) {
    std::vector<SubBatchPlan> plans = sampler_.next();
    for (int g = o.first_sub_batch; g < o.first_sub_batch + o.local_count(); ++g)
      workers_->submit(std::move(plans[static_cast<size_t>(g)]));
  }
}

TrainBatch TrainLoader::next() {
  SEG_CHECK(!failed_, runtime, "the training loader stopped after a data error and cannot continue");
  top_up();
  TrainBatch batch;
  const int gpus = dataset_.options().local_count();
  try {
    prof::Range range("loader.wait");  // an NVTX range: time the training loop waits for data
    for (int g = 0; g < gpus; ++g) {
      double waited = 0.0;
      batch.sub_batches.push_back(workers_->take(&waited));
      batch.wait_seconds += waited;
    }
  } catch (...) {
    failed_ = true;
    throw;
  }
  batch.iteration = batch.sub_batches.front().plan.iteration;
  top_up();  // keep the workers busy while the caller trains on this batch

  ++stats_.batches;
  stats_.images += batch.images();
  stats_.wait_seconds += batch.wait_seconds;
  for (const TrainSubBatch& s : batch.sub_batches) {
    stats_.skipped += static_cast<int64_t>(s.skipped.size());
    for (const BadSample& bad : s.skipped)
      if (stats_.first_skipped.size() < kKeptBadSamples) stats_.first_skipped.push_back(bad);
  }
  return batch;
}

}  // namespace seg::data
