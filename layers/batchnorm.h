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
  // forward followed by the activation act (ReLU or ReLU6, as the model's next layer): one fused op
  // "batch_norm_relu(6)" (ops::BatchNormOptions::act) unless fusion is off, then batch_norm and relu(6).
  Tensor forward_act(const Tensor& x, BnActivation act);

  Tensor weight, bias;                 // f32 [C]: gamma = 1, beta = 0 at construction
  Tensor running_mean, running_var;    // f32 [C]: 0 and 1 at construction
  Tensor num_batches_tracked;          // i64 []: training forward passes so far
  double momentum, eps;
  ops::BatchNormReducer* reducer = nullptr;  // set by SyncBN (distributed issue)
};

// Whether BatchNorm2d::forward_act (and Sequential, for a BatchNorm followed by a ReLU) fuses the
// activation into the BatchNorm: on unless the environment sets SEG_FUSE_BN_ACT=0 (for A/B timing
// and to see the separate ops in --ops-json and --amp-stats); set_bn_activation_fusion overrides it.
bool bn_activation_fusion();
void set_bn_activation_fusion(bool on);

}  // namespace seg
