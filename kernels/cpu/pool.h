// Pooling on channels-last tensors x [N, H, W, C].
//
// MaxPool2d(k, s, p), floor mode (PyTorch's default ceil_mode=False):
//   Ho = (H + 2p - k)/s + 1;  y[n,ho,wo,c] = max over the window of x (padding never wins)
//   argmax[n,ho,wo,c] = h*W + w of the first maximum in window scan order (PyTorch's tie rule);
//   a NaN in the window wins (propagates), as in PyTorch.
//   backward: dx[n,h,w,c] = sum of dy over the outputs whose argmax is (h, w): written as a gather
//   over the windows that contain (h, w), so threads never write the same element.
//   With k=3, s=2, p=1 this gives ceil(H/2), the ResNet stem's max-pool.
//
// AdaptiveAvgPool2d to (Ho, Wo), PyTorch's index rule:
//   rows of output i: [floor(i*H/Ho), ceil((i+1)*H/Ho)), likewise columns; y = mean of the window.
//   backward: each input in a window gets dy/window_size (windows may overlap when H % Ho != 0).
// Memory traffic: one read of x (k*k reads from cache) and one write of y; backward reads dy and argmax.
#pragma once

#include <cstdint>

#include "kernels/common/pool_shape.h"

namespace seg::cpu {

using ::seg::PoolShape;  // kernels/common/pool_shape.h
using ::seg::adaptive_start;
using ::seg::adaptive_end;

template <class T> void maxpool2d_forward(const PoolShape& s, const T* x, T* y, int32_t* argmax);
template <class T> void maxpool2d_backward(const PoolShape& s, const T* dy, const int32_t* argmax, T* dx);
template <class T> void maxpool2d_forward_ref(const PoolShape& s, const T* x, T* y, int32_t* argmax);


template <class T>
void adaptive_avgpool2d_forward(const T* x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo, T* y);
template <class T>
void adaptive_avgpool2d_backward(const T* dy, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo,
                                 T* dx);

}  // namespace seg::cpu
