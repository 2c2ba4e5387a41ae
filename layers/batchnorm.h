// BatchNorm2d: upstream's SynchronizedBatchNorm2d as a module.
//
// state_dict names: weight, bias (parameters), running_mean, running_var, num_batches_tracked
// (buffers). The extra SyncBN buffers upstream files carry (_tmp_running_mean, _tmp_running_var,
// _running_iter) are produced and accepted at checkpoint I/O, not stored here (DESIGN decision 12).
#pragma once

#include "layers/module.h"
#include "layers/ops.h"

namespace seg {

class BatchNorm2d : public UnaryModule {
 public:
  // momentum: upstream's SyncBN default is 0.001 (MODEL.bn_momentum), HRNet uses 0.1.
  explicit BatchNorm2d(int64_t channels, double momentum = 0.001, double eps = 1e-5);
  Tensor forward(const Tensor& x) override;  // batch statistics in train mode, running ones in eval

  Tensor weight, bias;                 // f32 [C]: gamma = 1, beta = 0 at construction
  Tensor running_mean, running_var;    // f32 [C]: 0 and 1 at construction
  Tensor num_batches_tracked;          // i64 []: training forward passes so far
  double momentum, eps;
  ops::BatchNormReducer* reducer = nullptr;  // set by SyncBN (distributed issue)
};

}  // namespace seg
