// CUDA fused log-softmax + NLL loss with ignore index -1, and pixel accuracy: the twins of
// kernels/cpu/softmax_nll.h and of the counting in models/segmentation_module.cpp.
//
//   logits [P, C] (C contiguous; T in {float, f16, bf16}: halves are read directly, no f32 copy)
//   labels [P] int32 in [0, C) or -1 (ignored)
//   lse[p]  = log sum_c exp(logits[p, c])                       f32, every pixel, max-shifted
//   loss    = (1/V) sum_{p: label >= 0} (lse[p] - logits[p, label[p]]),   V = valid pixels
//   dlogits[p, c] = k * (exp(logits[p, c] - lse[p]) - [c == label[p]]) for valid p, 0 otherwise,
//                   k = dL/dloss / V
//   pixel accuracy (upstream): correct = #{p: label >= 0, argmax_c logits[p, c] == label}, labelled =
//                   #{p: label >= 0}; argmax as argmax_channels (first maximum, NaN first)
//
// Difference from the CPU: cpu::softmax_nll_forward returns an NllResult to the host. A GPU kernel
// cannot return a value without a synchronisation, so here every result lives in device memory,
// in one NllDeviceResult that the forward, and pixel_accuracy, fill in:
//   loss_sum (f32 here, f64 on the CPU), loss (= loss_sum / valid, 0 when valid == 0: the value of
//   the loss tensor, also written to loss_out when given), valid, bad_pixel / bad_label (the first
//   pixel whose label is outside [-1, C), -1 if none), correct, labelled.
// The op reads the struct back once per step (with the found-inf flag, DESIGN 13) and raises the
// bad-label error then; the backward takes k from the device (softmax_nll_backward_device_scale),
// so no host read is needed between forward and backward. The CPU-style backward with a host scale
// is provided too.
//
// Launch: row groups (kernels/cuda/channel_rows.cuh): G = min(32, next power of two >= C) lanes per
// pixel, 256 threads per block, grid B = min(ceil(P / (256 / G)), 1024), grid-stride over pixels.
// Forward: max, sum of exp and the label's logit by butterfly shuffles in the group; lane 0 of the
// group writes lse and adds the pixel's loss term, validity and bad index to per-thread f32/int64
// accumulators; the block combines the group leaders' (the butterfly levels >= G, none for G = 32),
// then thread 0 folds the 8 warps in order into workspace partial[b] (one barrier);
// a second launch (one block) adds the B partials in a fixed order and writes the result. No atomics:
// the sum is the same bits on every run (DESIGN 11); a float atomicAdd per block into the result
// would save the second launch (~3 us) but make the loss depend on block timing.
// pixel_accuracy: the same two-pass pattern with integer counts (int64 atomics would be deterministic
// too, but then the result must be zeroed by a launch first: no saving).
// Backward: the same row groups, no reduction: each lane writes its strided channels.
// Workspace: softmax_nll_workspace_bytes(P, C) / pixel_accuracy_workspace_bytes(P, C) (20 resp. 16
// bytes per block), device memory owned by the caller, 8-byte aligned.
// Memory traffic: forward reads the logits once from DRAM (the 2nd and 3rd passes over a row hit L1)
// and labels, writes 4 bytes of lse per pixel; backward reads logits, labels, lse and writes
// dlogits: P*C*2*sizeof(T) + 8P bytes; pixel_accuracy reads logits and labels once.
// Accuracy against the CPU: lse and the gradients differ by the channel-sum order and the GPU's
// expf/logf (a few ulp, (2C + 16) * 2^-24 relative at most); loss_sum by the f32 tree sum; counts,
// bad pixel and label are exact (tests/kernels/cuda/test_softmax_nll.cpp states the bounds).
// Device pointers; no synchronisation, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/half.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

struct NllDeviceResult {
  float loss_sum = 0;       // sum over valid pixels of -log p(label), f32
  float loss = 0;           // loss_sum / valid, 0 when no pixel is valid
  int64_t valid = 0;        // V
  int64_t bad_pixel = -1;   // first pixel whose label is outside [-1, C), or -1
  int32_t bad_label = 0;    // its label
  int32_t reserved = 0;
  int64_t correct = 0;      // pixel_accuracy: labelled pixels whose argmax is the label
  int64_t labelled = 0;     // pixel_accuracy: pixels with label >= 0
};

size_t softmax_nll_workspace_bytes(int64_t P, int64_t C);
size_t pixel_accuracy_workspace_bytes(int64_t P, int64_t C);

// Writes lse[P] and result->{loss_sum, loss, valid, bad_pixel, bad_label}; loss_out (one f32 in device
// memory, may be null) receives result->loss.
template <class T>
void softmax_nll_forward(const T* logits, const int32_t* labels, int64_t P, int64_t C, float* lse,
                         NllDeviceResult* result, float* loss_out, void* workspace, Stream stream);

// As on the CPU: dlogits with k = float(scale) given by the host.
template <class T>
void softmax_nll_backward(const T* logits, const int32_t* labels, const float* lse, int64_t P, int64_t C, double scale,
                          T* dlogits, Stream stream);

// k = float(double(*grad_loss) / result->valid) (0 when valid == 0), read on the device.
template <class T>
void softmax_nll_backward_device_scale(const T* logits, const int32_t* labels, const float* lse, int64_t P, int64_t C,
                                       const float* grad_loss, const NllDeviceResult* result, T* dlogits,
                                       Stream stream);

// Writes result->{correct, labelled}; the other fields are left alone.
template <class T>
void pixel_accuracy(const T* logits, const int32_t* labels, int64_t P, int64_t C, NllDeviceResult* result,
                    void* workspace, Stream stream);

}  // namespace seg::cuda
