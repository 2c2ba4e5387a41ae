// The convolution paths behind kernels/cuda/conv2d.h's entry points, one set per .cu file; only
// kernels/cuda/conv2d_dispatch.cu calls them (and tests through ConvAlgo). Same arguments as the
// entry points; each path works for every shape its comment allows.
#pragma once

#include <cstddef>

#include "kernels/cuda/conv2d.h"

namespace seg::cuda::detail {

// Implicit GEMM, any shape (conv2d_igemm.cu).
template <class T> void conv2d_forward_igemm(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream);
template <class T> void conv2d_backward_data_igemm(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream);
size_t conv2d_backward_weight_igemm_workspace_bytes(const ConvShape& s);
template <class T>
void conv2d_backward_weight_igemm(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, void* workspace,
                                  Stream stream);

// Depthwise shapes only: conv2d_is_depthwise(s) (conv2d_depthwise.cu).
template <class T>
void conv2d_forward_depthwise(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream);
template <class T> void conv2d_backward_data_depthwise(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream);
// Whether forward and backward data stage the weights in shared memory (default true; where they
// fit). Off reads them from w as before 2026-12-07: for the tests' before/after comparison.
void set_depthwise_weight_staging(bool on);
size_t conv2d_backward_weight_depthwise_workspace_bytes(const ConvShape& s);
template <class T>
void conv2d_backward_weight_depthwise(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, void* workspace,
                                      Stream stream);

// Direct, any shape, no workspace (conv2d_direct.cu).
template <class T> void conv2d_forward_direct(const ConvShape& s, const T* x, const T* w, const T* b, T* y, Stream stream);
template <class T> void conv2d_backward_data_direct(const ConvShape& s, const T* w, const T* dy, T* dx, Stream stream);
template <class T>
void conv2d_backward_weight_direct(const ConvShape& s, const T* x, const T* dy, T* dw, T* db, Stream stream);

}  // namespace seg::cuda::detail
