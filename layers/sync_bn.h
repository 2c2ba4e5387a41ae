// SyncBN over a Communicator: BatchNorm's per-channel statistics summed over all ranks.
//
// batch_norm (layers/ops_batchnorm.cpp) calls the reducer in forward for the sums that give the
// global mean, the count, then the squared deviations from the global mean, and once in backward
// (sum dy, sum dy*xhat; the count is forward's), all in f64 whatever the storage dtype, on the
// activations' device (host memory for MPI's CPU ranks, device buffers for NCCL's GPUs). So N
// ranks normalise with the statistics of the union of their sub-batches, sizes unequal or zero
// included, with the same formula as one device (DESIGN decision 12).
#pragma once

#include <vector>

#include "core/comm.h"
#include "layers/batchnorm.h"
#include "layers/ops.h"

namespace seg {

class CommBatchNormReducer final : public ops::BatchNormReducer {
 public:
  explicit CommBatchNormReducer(Communicator& comm) : comm_(comm) {}
  void allreduce_sum(Tensor& values) override { comm_.allreduce_sum(values.data<double>(), values.numel()); }
  double sum_count(double count) override {
    comm_.allreduce_sum(&count, 1);  // between GPUs: a staged host value, the one host wait of SyncBN
    return count;
  }

 private:
  Communicator& comm_;
};

// Points every BatchNorm of `bns` at `reducer` (nullptr: back to per-rank statistics).
inline void use_sync_bn(const std::vector<BatchNorm2d*>& bns, ops::BatchNormReducer* reducer) {
  for (BatchNorm2d* bn : bns) bn->reducer = reducer;
}

}  // namespace seg
