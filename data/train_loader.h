// TrainLoader: the training input pipeline. The TrainSampler plans iterations on the caller's
// thread; `workers` threads decode, resize and normalise the sub-batches (OrderedWorkers); up to
// `prefetch` sub-batches are in flight ahead of the consumer. For a given seed the batches are the
// same whatever the number of workers (DESIGN decision 11).
//
//   TrainDataset dataset(options);
//   TrainLoader loader(dataset);          // or TrainLoader(dataset, resume_iteration)
//   for (...) {
//     TrainBatch batch = loader.next();   // batch.sub_batches[g] goes to GPU g
//     ...                                 // loader.stats().wait_seconds: time spent waiting for data
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/ordered_workers.h"
#include "data/train_dataset.h"
#include "data/train_sampler.h"

namespace seg::data {

struct TrainBatch {
  int64_t iteration = 0;
  std::vector<TrainSubBatch> sub_batches;  // one per GPU, in GPU order (this rank's only: options.local_count())
  double wait_seconds = 0.0;               // how long next() blocked for this batch
  int64_t images() const;                  // samples over all sub-batches
};

struct LoaderStats {
  int64_t batches = 0;
  int64_t images = 0;
  double wait_seconds = 0.0;            // total time next() blocked
  int64_t skipped = 0;                  // bad samples skipped (on_bad_sample = skip)
  std::vector<BadSample> first_skipped; // the first few, for the report
};

class TrainLoader {
 public:
  // `dataset` must outlive the loader. Starts at `start_iteration` (resume).
  explicit TrainLoader(const TrainDataset& dataset, int64_t start_iteration = 0);
  ~TrainLoader();

  // The next iteration's batch. Rethrows a sample's Error(data) (on_bad_sample = fail); after
  // that the loader is finished and further calls are an error.
  TrainBatch next();
  const LoaderStats& stats() const { return stats_; }
  int workers() const;

 private:
  void top_up();

  const TrainDataset& dataset_;
  TrainSampler sampler_;
  std::unique_ptr<OrderedWorkers<SubBatchPlan, TrainSubBatch>> workers_;
  int64_t prefetch_ = 0;
  LoaderStats stats_;
  bool failed_ = false;  // a data error ended the stream (the batch in progress is incomplete)
};

}  // namespace seg::data
