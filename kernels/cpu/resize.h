// Bilinear resize with align_corners=False (PyTorch's F.interpolate(mode='bilinear'), which every
// upstream decoder uses), channels-last x [N, H, W, C] -> y [N, Ho, Wo, C].
//
// For output row i (columns alike), with scale = H / Ho:
//   src = max(scale * (i + 0.5) - 0.5, 0)      (half-pixel centres, clamped at the top edge)
//   h0 = floor(src), h1 = min(h0 + 1, H - 1), l1 = src - h0, l0 = 1 - l1
//   y = l0*(m0*x[h0,w0] + m1*x[h0,w1]) + l1*(m0*x[h1,w0] + m1*x[h1,w1])
// Backward scatters dy into the same four inputs with the same weights. To keep it race-free and
// deterministic, threads split the channels (each owns a channel range of every pixel).
// Memory traffic: forward reads each input row about Ho/H times (cache-resident), writes y once.
#pragma once

#include <cstdint>

#include "kernels/common/resize_shape.h"

namespace seg::cpu {

// ResizeShape, and the source indices and weights of one output coordinate (bilinear_tap), computed
// in A (float for float and half tensors, as PyTorch's float path does; double for double tensors):
// kernels/common/resize_shape.h.
using ::seg::ResizeShape;
using ::seg::LinearTap;
using ::seg::bilinear_tap;

template <class T> void resize_bilinear_forward(const ResizeShape& s, const T* x, T* y);
template <class T> void resize_bilinear_backward(const ResizeShape& s, const T* dy, T* dx);

}  // namespace seg::cpu
