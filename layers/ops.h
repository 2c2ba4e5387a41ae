// Differentiable ops: the index.
//
// Each op computes its forward with a kernel from kernels/, then records its backward rule with
// core/autograd.h's record(). Forward and backward of an op sit side by side in one file:
//
//   ops_conv.cpp         conv2d
//   ops_elementwise.cpp  add, mul, scale, relu, relu6
//   ops_reduce.cpp       sum, mean
//   ops_loss.cpp         softmax_nll_loss (fused log-softmax + NLL, ignore index -1)
//
// Conventions: activations are [N, H, W, C]; inputs may be non-contiguous (they are made contiguous);
// outputs are new contiguous tensors on the input's device and dtype. A dtype or device without a
// kernel is an Error naming op, dtype and device (no silent fallback).
#pragma once

#include <cstdint>

#include "core/tensor.h"

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
// the mean over valid pixels of -log softmax(logits)[label]. Labels outside [-1, C) are a data error.
Tensor softmax_nll_loss(const Tensor& logits, const Tensor& labels);

// Shared argument checks (used by every op file): a CPU-only op on another device is an Error naming
// op and device; dtypes outside `allowed` are reported by the dispatcher.
void require_cpu(const char* op, const Tensor& t);
void require_same_shape(const char* op, const Tensor& a, const Tensor& b);

}  // namespace seg::ops
