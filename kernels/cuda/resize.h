// Bilinear resize, align_corners=False, on the GPU: the twins of kernels/cpu/resize.h (same names and
// arguments, plus the stream). x [N, H, W, C] -> y [N, Ho, Wo, C], channels-last.
//
// Math (kernels/common/resize_shape.h): output row i reads input rows h0(i), h1(i) with weights
// l0(i), l1(i), where src = max((H/Ho)*(i + 0.5) - 0.5, 0), h0 = min(floor(src), H-1),
// h1 = min(h0 + 1, H - 1), l1 = src - h0, l0 = 1 - l1; columns alike.
//   forward:  y = l0*(m0*x[h0,w0] + m1*x[h0,w1]) + l1*(m0*x[h1,w0] + m1*x[h1,w1])
//   backward: dx[h,w] = sum over the outputs (i, j) that read (h, w) of the weight of that tap * dy.
// The backward is a gather, one thread per dx element. Its index ranges come from the monotone
// h0(i): output row i reads row h iff h0(i) = h or h1(i) = h, i.e. h0(i) in {h-1, h} (h1 = h0 + 1
// unless clamped at the last row), so the rows are the contiguous range
//   i_lo = min{i : h0(i) >= h - 1},   i_hi = max{i : h0(i) <= h},
// found from the closed-form estimate i ~ (h -/+ 0.5)/scale - 0.5 and corrected by stepping with the
// exact tap function (the estimate is only a starting point; the range is exact). Within the range
// the four taps of each output are checked one by one, in the CPU's order (00, 01, 10, 11 per
// output, outputs in (i, j) order), the order of the CPU's scatter.
//
// The taps are computed in f32 with __fmaf_rn/__fadd_rn, the CPU's roundings (its one fma
// included), so that the range search and the gather loop always agree on them. The interpolation itself is written plainly: nvcc (and g++, for the
// CPU twin) may fuse a*b + c into an fma, so CPU and GPU agree to a few f32 ulps, not bit for bit.
// (Interpolation is continuous, so even a tap index moved by such a rounding difference where src
// is an integer moves the result by an ulp-sized weight only.)
//
// Launch: grid-stride loops over (pixel, channel pack), one thread per V consecutive channels of
// one output (forward) or input (backward) pixel; V = 4 floats or 8 halves (16-byte accesses) when
// C % V == 0 and the pointers are 16-byte aligned, else 1. 256 threads per block, grid_for() blocks.
// Memory traffic: forward reads each input pixel about (Ho/H)*(Wo/W) times from L1/L2 and about
// once from DRAM, writes y once; backward reads dy about once, writes dx once.
//
// Atomics (DESIGN 11): a scatter backward (each output adds its four weighted values into dx with
// atomicAdd) would read dy once with no range search, but needs a zeroed dx, reorders the sums from
// run to run and, on 16-bit storage, rounds every partial sum; the gather has none of these.
// Tensors must have < 2^31 elements. Pointers are device pointers; nothing synchronises or allocates.
#pragma once

#include <cstdint>

#include "kernels/common/resize_shape.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

using ::seg::ResizeShape;

template <class T> void resize_bilinear_forward(const ResizeShape& s, const T* x, T* y, Stream stream);
template <class T> void resize_bilinear_backward(const ResizeShape& s, const T* dy, T* dx, Stream stream);

}  // namespace seg::cuda
