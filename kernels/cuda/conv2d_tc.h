// Implicit-GEMM 2-D convolution on tensor cores (kernels/cuda/gemm/*), NHWC activations and
// [O, KH, KW, C/groups] weights (DESIGN decision 1). Plain C++ launcher header: no CUDA include.
// Shapes, formulas and argument order mirror kernels/cpu/conv2d.h, plus a trailing stream and
// optional extras. T = seg::f16, seg::bf16 (mma.sync m16n8k16, f32 sums) or float (TF32 on mma.sync
// m16n8k8, or WMMA m16n16k8 when asked: the inputs are rounded to 10 mantissa bits, PyTorch's default for convolutions; strict
// f32 is the SIMT kernels' job). Outputs are overwritten.
//
// The three GEMMs (per group g; P = N*Ho*Wo output pixels, taps = KH*KW, Cg = C/groups, Og = O/groups):
//   forward        y[P, Og]          = A[P, taps*Cg] * W^T,   A[p, (kh,kw,c)] = x[n, ho*sh-ph+kh*dh, wo*sw-pw+kw*dw, c]
//   backward data  dx[N*H*W, Cg]     = A[N*H*W, taps*Og] * B,  A[(n,h,w), (kh,kw,o)] = dy[n, ho, wo, o] where
//                                      ho*sh = h+ph-kh*dh and wo*sw = w+pw-kw*dw (0 unless both divide
//                                      exactly and land inside dy), B[(kh,kw,o), c] = w[o, kh, kw, c];
//                                      with a stride, one such GEMM per stride phase, over the phase's
//                                      pixels and only the taps that reach them (a phase no tap
//                                      reaches is zero-filled): ConvTcArgs::stride_phases
//   backward weight dw[Og, taps*Cg]  = dy^T[Og, P] * A[P, taps*Cg]  (A as in forward), split over P
//                                      (split-K) when the output is small; db[o] = sum_p dy[p, o]
// No im2col buffer: the loaders compute each 16-byte chunk's address from the pixel and the tap
// (kernels/cuda/gemm/operand_source.h); out-of-image taps are zero-filled. Dilation and stride enter
// only through that index math. Ragged shapes are handled; the 16-byte path needs Cg and Og (per
// operand) multiples of 8 (4 for float), pixel strides likewise and 16-byte aligned pointers, else
// that operand is gathered element by element (C = 3 of a first convolution, channel slices at odd
// offsets): slower, same results. Backward weight of one group whose C is not a multiple of 8 (4
// for float) does better when the workspace allows: it copies x once with its channels padded by
// zeros to the next multiple and runs the 16-byte path on that (gemm/conv2d_tc_impl.h, ChannelPad).
//
// Launch: as gemm_tc.h (grid over (P or N*H*W or Og) x (Og or Cg or taps*Cg) tiles x groups*splits).
// Traffic per GEMM: the activation operand is read ceil(Og/BN) times (each read gathers taps
// neighbours, mostly from L2), the weights ceil(P/BM) times, the output written once.
// Depthwise convolutions (Cg == 1) compute correctly here but belong to the depthwise kernel:
// conv2d_tc_preferred() says which shapes these kernels are meant for.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/conv_shape.h"
#include "kernels/common/half.h"
#include "kernels/cuda/gemm_tc.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

struct ConvTcArgs {
  TcOptions options;
  int64_t ldx = 0;  // elements between consecutive pixels of x (dx); 0 = C (dense)
  int64_t ldy = 0;  // elements between consecutive pixels of y (dy); 0 = O (dense)
  TcWorkspace workspace;  // backward weight: split-K and bias-gradient partial sums
  TcActivation act = TcActivation::none;  // forward: applied after the bias
  // Backward data of a strided convolution: one GEMM per stride phase over only the taps that reach
  // it (gemm/conv2d_tc_impl.h, dgrad_covers). false: one GEMM over every (pixel, tap) pair, mostly
  // zeros, as before 2026-12-07 (the kernel lab's v7 and the tests' comparison). Same results.
  bool stride_phases = true;
};

// Dense and grouped convolutions with at least 4 input and output channels per group.
bool conv2d_tc_preferred(const ConvShape& s);

template <class T>
void conv2d_forward_tc(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream,
                       const ConvTcArgs& args = {});
template <class T>
void conv2d_backward_data_tc(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream,
                             const ConvTcArgs& args = {});
// dw and db may each be null.
template <class T>
void conv2d_backward_weight_tc(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, Stream stream,
                               const ConvTcArgs& args = {});
// Workspace conv2d_backward_weight_tc uses at best (less works: fewer splits, a slower bias sum, and
// for a C that is not whole 16-byte chunks the element-wise path instead of a padded copy of x).
template <class T>
size_t conv2d_backward_weight_tc_workspace_bytes(const ConvShape& s, const TcOptions& options = {});

}  // namespace seg::cuda
