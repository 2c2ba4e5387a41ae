// 2-D convolution on the GPU, channels-last (DESIGN decision 1), the entry points the conv op calls:
//
//   x  [N, H,  W,  C]            input
//   w  [O, KH, KW, C/groups]     weights (kernels/common/conv_shape.h)
//   b  [O]                       optional bias (null: none)
//   y  [N, Ho, Wo, O]            output
//   y[n,ho,wo,o] = b[o] + sum_{kh,kw,c} x[n, ho*s_h - p_h + kh*d_h, wo*s_w - p_w + kw*d_w, g*Cg + c] * w[o,kh,kw,c]
//   g = o / (O/groups), Cg = C/groups; positions outside the input read 0.
//   backward data:   dx[n,h,w,g*Cg+c] = sum over (kh, kw, o in group g) with h = ho*s_h - p_h + kh*d_h
//                    (likewise w) of dy[n,ho,wo,o] * w[o,kh,kw,c]
//   backward weight: dw[o,kh,kw,c] = sum_{n,ho,wo} dy[n,ho,wo,o] * x[n, h(ho,kh), w(wo,kw), g*Cg+c];
//                    db[o] = sum_{n,ho,wo} dy[n,ho,wo,o]
//
// T in {float, seg::f16, seg::bf16}: half inputs are read natively and every path accumulates in f32
// (the CPU widens half tensors to f32 in the op layer instead); results are rounded to T once.
// Every output is overwritten. Pointers are device pointers; nothing synchronises or allocates:
// conv2d_backward_weight takes conv2d_backward_weight_workspace_bytes(s) bytes of scratch
// (16-byte aligned, contents undefined on entry). Tensors must have < 2^31 elements.
//
// The one place that picks the algorithm is kernels/cuda/conv2d_dispatch.cu:
//   depthwise (groups == C == O > 1)  -> memory-bound depthwise kernels   (conv2d_depthwise.cu)
//   everything else                   -> implicit-GEMM SIMT kernels        (conv2d_igemm.cu)
//   ConvAlgo::direct                  -> one thread per output element     (conv2d_direct.cu), a slow
//                                        plain fallback and cross-check
// set_conv_algo() (or SEG_CUDA_CONV_ALGO=auto|igemm|depthwise|direct) forces a path for tests and
// benchmarks; forcing depthwise on a shape that is not depthwise falls back to automatic. The
// tensor-core kernels (issue 15) add their ConvAlgo value and their branch in the same function.
// Each path's header comment (in its .cu) states its tiling, launch configuration, memory traffic
// and the atomics it avoids. All paths are deterministic (no atomics; fixed-order reductions).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/conv_shape.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

using ::seg::ConvShape;

enum class ConvAlgo { automatic, implicit_gemm, depthwise, direct };
ConvAlgo conv_algo();
void set_conv_algo(ConvAlgo algo);

// One filter per channel (groups == C == O > 1): MobileNetV2's 3x3 convolutions.
inline bool conv2d_is_depthwise(const ConvShape& s) { return s.groups == s.C && s.O == s.C && s.groups > 1; }

template <class T> void conv2d_forward(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream);
template <class T> void conv2d_backward_data(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream);
// Bytes of scratch conv2d_backward_weight needs for this shape (whichever path it takes).
size_t conv2d_backward_weight_workspace_bytes(const ConvShape& s);
// dw must not be null; db may be (no bias).
template <class T>
void conv2d_backward_weight(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, void* workspace, Stream stream);

}  // namespace seg::cuda
