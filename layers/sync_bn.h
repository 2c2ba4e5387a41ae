// SyncBN over a Communicator: BatchNorm's per-channel statistics summed over all ranks.
//
// batch_norm (layers/ops_batchnorm.cpp) calls the reducer twice in forward (the counts and sums that
// give the global mean, then the squared deviations from it) and once in backward (sum dy,
// sum dy*xhat, count), all in f64 on the host, whatever the storage dtype. So N ranks normalise with
// the statistics of the union of their sub-batches, sizes unequal or zero included, with the same
// formula as one device (DESIGN decision 12).
#pragma once

#include <vector>

#include "core/comm.h"
#include "layers/batchnorm.h"
#include "layers/ops.h"

namespace seg {

class CommBatchNormReducer final : public ops::BatchNormReducer {
 public:
  explicit CommBatchNormReducer(Communicator& comm) : comm_(comm) {}
  void allreduce_sum(std::vector<double>& values) override {
    comm_.allreduce_sum(values.data(), static_cast<int64_t>(values.size()));
  }

 private:
  Communicator& comm_;
};

// Points every BatchNorm of `bns` at `reducer` (nullptr: back to per-rank statistics).
inline void use_sync_bn(const std::vector<BatchNorm2d*>& bns, ops::BatchNormReducer* reducer) {
  for (BatchNorm2d* bn : bns) bn->reducer = reducer;
}

}  // namespace seg
