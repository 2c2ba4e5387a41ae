// Differentiable ops: the index.
//
// Each op computes its forward with a kernel from kernels/, then records its backward rule with
// core/autograd.h's record(). Forward and backward of an op sit side by side in one file:
//
//   ops_conv.cpp         conv2d
//   ops_elementwise.cpp  add, mul, scale, relu, relu6
//   ops_reduce.cpp       sum, mean
//   ops_loss.cpp         softmax_nll_loss (fused log-softmax + NLL, ignore index -1), pixel accuracy
//   ops_batchnorm.cpp    batch_norm (train/eval, SyncBN through a reducer)
//   ops_pool.cpp         max_pool2d, adaptive_avg_pool2d
//   ops_resize.cpp       resize_bilinear (align_corners=False)
//   ops_softmax.cpp      softmax, log_softmax, argmax_channels
//   ops_dropout.cpp      dropout2d
//   ops_concat.cpp       concat_channels
//   ops_cast.cpp         cast (dtype conversion with a backward)
//
// Conventions: activations are [N, H, W, C]; inputs may be non-contiguous (they are made contiguous);
// outputs are new contiguous tensors on the input's device and dtype. The kernel calls are the only
// device-aware lines (SEG_DISPATCH_DEVICE and SEG_KERNEL, core/dispatch.h): the same op body runs
// on the CPU and on a CUDA device. A dtype or device without a kernel is an Error naming op, dtype and
// device (no silent fallback).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profiler.h"
#include "core/tensor.h"
#include "kernels/common/batchnorm_math.h"

namespace seg::ops {

struct Conv2dOptions {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dil_h = 1, dil_w = 1;
  int64_t groups = 1;
  // The square form every upstream layer uses.
  static Conv2dOptions square(int64_t stride, int64_t pad, int64_t dilation = 1, int64_t groups = 1) {
    return Conv2dOptions{stride, stride, pad, pad, dilation, dilation, groups};
  }
};

// x [N,H,W,C], w [O,KH,KW,C/groups], b [O] or undefined -> [N,Ho,Wo,O]
//   backward: dx = conv_transpose(dy, w), dw = correlate(x, dy), db = sum(dy) over N,Ho,Wo
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dOptions& opt);

// Same-shape elementwise ops.
Tensor add(const Tensor& a, const Tensor& b);  // da = dy, db = dy
Tensor mul(const Tensor& a, const Tensor& b);  // da = dy*b, db = dy*a
Tensor scale(const Tensor& a, double s);       // da = s*dy
Tensor relu(const Tensor& x);                  // dx = dy * (x > 0)
Tensor relu6(const Tensor& x);                 // dx = dy * (0 < x < 6)

// Reductions over all elements, to a one-element tensor of shape [].
Tensor sum(const Tensor& x);   // dx = dy broadcast
Tensor mean(const Tensor& x);  // dx = dy / numel broadcast

// logits [N,H,W,C] (or [P,C]), labels i32 [N,H,W] (or [P]) with -1 = ignore -> loss of shape []:
// the mean over valid pixels of -log softmax(logits)[label]. Labels outside [-1, C) are a data error
// (at once on the CPU; on a GPU when the stats are read back and checked, see LossStats).
// `stats`, when given, receives the counting block (a new one unless it is already defined).
Tensor softmax_nll_loss(const Tensor& logits, const Tensor& labels, Tensor* stats = nullptr);

// What softmax_nll_loss and pixel_accuracy_counts count, in one small u8 block on the logits'
// device (layout seg::cuda::NllDeviceResult), so a training step reads all of it back at once.
struct LossStats {
  double loss_sum = 0, loss = 0;  // f32 on a GPU
  int64_t valid = 0;              // pixels with a label in [0, C)
  int64_t bad_pixel = -1;         // first pixel with a label outside [-1, C), or -1
  int32_t bad_label = 0;
  int64_t correct = 0, labelled = 0;  // pixel accuracy: argmax == label among label >= 0
};
Tensor new_loss_stats(const Tensor& like);   // a zeroed block on like's device
LossStats decode_loss_stats(const Tensor& host_block);
// Throws the loss's data error (naming pixel and label) when the block recorded a bad label.
void check_loss_stats(const LossStats& stats, int64_t num_classes);
// Upstream's pixel accuracy counts of logits [..., C] against labels (-1 ignored) into `stats`.
void pixel_accuracy_counts(const Tensor& logits, const Tensor& labels, Tensor& stats);

// SyncBN's hook: sums per-channel statistics over all ranks. Null = one rank.
class BatchNormReducer {
 public:
  virtual ~BatchNormReducer() = default;
  // In place: a contiguous f64 tensor on the activations' device (the CPU, or this rank's GPU,
  // where the sum is queued on the current stream: no host wait).
  virtual void allreduce_sum(Tensor& values) = 0;
  // The sum over the ranks of their value counts: a host number (BatchNorm's global count M).
  virtual double sum_count(double count) = 0;
};

struct BatchNormOptions {
  bool training = true;
  double momentum = 0.1;  // upstream SyncBN default is 0.001 (MODEL.bn_momentum)
  double eps = 1e-5;
  BatchNormReducer* reducer = nullptr;
  // The activation that follows the BatchNorm in the model, fused into its passes (none, relu,
  // relu6): the op is then recorded as "batch_norm_relu" / "batch_norm_relu6".
  BnActivation act = BnActivation::none;
};

// x [..., C]; gamma, beta, running_mean, running_var [C] in f32 (f64 for f64 x). Half parameters
// (AMP O3, "pure fp16") are widened to f32 for the arithmetic and the statistics rounded back.
// Training: normalises with the batch statistics (biased variance + eps) and updates the running
// statistics in place (unbiased variance, momentum m: r = (1-m) r + m batch). Eval: running statistics.
//   backward (train): dx = gamma*invstd*(dy - mean(dy) - xhat*mean(dy*xhat)); dgamma = sum(dy*xhat);
//   dbeta = sum(dy).  backward (eval): dx = dy*gamma*invstd.
// With opt.act, y = act(BN(x)) in the same pass, the same numbers as relu/relu6 applied to the
// BatchNorm's output (the clamp commutes with the rounding to the storage type), without the
// activation's own pass over memory and without keeping the BatchNorm's output alive for backward:
// backward masks dy where the activation did not pass (decided on BN(x) recomputed from x, with
// the forward's own operations, so y is neither kept nor read: kernels/cpu/batchnorm.h) and runs
// the BatchNorm backward on it.
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean, Tensor& running_var,
                  const BatchNormOptions& opt);

// x [N,H,W,C] -> [N,Ho,Wo,C]; floor mode; ties go to the first maximum in window order.
//   backward: dy flows to the argmax of each window.
Tensor max_pool2d(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding);
// x [N,H,W,C] -> [N,out_h,out_w,C] with PyTorch's window rule; backward spreads dy/window_size.
Tensor adaptive_avg_pool2d(const Tensor& x, int64_t out_h, int64_t out_w);
// x [N,H,W,C] -> [N,out_h,out_w,C], bilinear, align_corners=False; backward is the transpose.
Tensor resize_bilinear(const Tensor& x, int64_t out_h, int64_t out_w);
// Over the last dimension (channels). backward: softmax dx = y*(dy - sum(dy*y)); log_softmax dx = dy - exp(y)*sum(dy).
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
// Index of the largest channel, i32 [..] (no gradient).
Tensor argmax_channels(const Tensor& x);
// Dropout2d: in training, zeroes whole channels of each sample with probability p and scales the rest
// by 1/(1-p), with a fresh Philox stream per call (next_stream(dropout)); identity in eval.
Tensor dropout2d(const Tensor& x, double p, bool training);
// Concatenation along the channel (last) dimension; backward slices dy.
Tensor concat_channels(const std::vector<Tensor>& xs);

// x converted to `dtype` (returns x itself when it already has it); dx = dy converted back.
Tensor cast(const Tensor& x, DType dtype);

// The profiler's description of a tensor: its shape and dtype.
nlohmann::json prof_tensor(const Tensor& t);

// Shared argument check: same shape, dtype and device (Error naming the op otherwise). Every
// multi-input op checks that its inputs share one device (core/tensor.h check_same_device); a
// device or dtype without a kernel is reported by the dispatcher (core/dispatch.h).
void require_same_shape(const char* op, const Tensor& a, const Tensor& b);

}  // namespace seg::ops
