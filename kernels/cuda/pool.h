// Pooling on channels-last tensors x [N, H, W, C] on the GPU: the twins of kernels/cpu/pool.h
// (same names and arguments, plus the stream). Math, exactly as the CPU kernels:
//
// MaxPool2d(k, s, p), floor mode: Ho = (H + 2p - k)/s + 1.
//   y[n,ho,wo,c] = max over the window (padding never wins); argmax = h*W + w of the first maximum in
//   window scan order (rows, then columns); a NaN wins and later NaNs move argmax (the CPU's
//   `v > best || isnan(v)`). backward: dx[n,h,w,c] = sum of dy over the outputs whose window holds
//   (h, w) and whose argmax is (h, w), in (ho, wo) order: a gather, one thread per dx element.
// AdaptiveAvgPool2d to (Ho, Wo): window i = [floor(i*H/Ho), ceil((i+1)*H/Ho)) (PyTorch's rule;
//   windows overlap when H % Ho != 0); y = sum * (1/count). backward: dx = sum over the windows that
//   hold (h, w) of dy * (1/count), gathered in (i, j) order. The windows holding row h are
//   i in [floor(h*Ho/H), floor(((h+1)*Ho - 1)/H)] (from start(i) <= h < end(i)).
//
// The CUDA kernels do the CPU's f32 operations in the CPU's order: max pooling (compares and sums
// of dy) and the adaptive forward (sums, then one multiply) are bit-identical to the CPU; the
// adaptive backward's acc += dy*inv may be fused into an fma on either side (nvcc and g++ both
// contract by default), so it agrees to a few ulps.
// Pointers are device pointers; nothing synchronises or allocates. Tensors must have < 2^31 elements.
//
// Launch: every kernel is a grid-stride loop over (pixel, channel pack): one thread owns V
// consecutive channels of one output (forward) or input (backward) pixel, V = 4 floats or 8 halves
// (16-byte loads and stores) when C % V == 0 and every pointer is 16-byte aligned, else V = 1.
// Consecutive threads own consecutive packs, so a warp reads 512 contiguous bytes of one pixel row
// (coalesced); 256 threads per block, grid_for() blocks (kernel_util.cuh).
//
// Memory traffic (DRAM, the window overlap hits in L1/L2):
//   maxpool forward   reads x once, writes y and argmax (sizeof(T) + 4 bytes per output element)
//   maxpool backward  reads dy and argmax about once (k/s windows per input row, cached), writes dx
//   adaptive forward  reads x about once (once more per overlapping window row), writes y
//   adaptive backward reads dy about once, writes dx
//
// Atomics (DESIGN 11): both backward passes could scatter (each output adds dy into its argmax or
// window with atomicAdd, reading dy exactly once and skipping the argmax comparisons). They gather
// instead: no float atomics (they make the order of the sum, hence the bits, vary from run to run;
// on f16/bf16 storage they would also round every partial sum to 16 bits), and every dx element is
// written exactly once, so dx needs no zero fill.
#pragma once

#include <cstdint>

#include "kernels/common/pool_shape.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

using ::seg::PoolShape;

template <class T> void maxpool2d_forward(const PoolShape& s, const T* x, T* y, int32_t* argmax, Stream stream);
template <class T>
void maxpool2d_backward(const PoolShape& s, const T* dy, const int32_t* argmax, T* dx, Stream stream);

template <class T>
void adaptive_avgpool2d_forward(const T* x, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo, T* y,
                                Stream stream);
template <class T>
void adaptive_avgpool2d_backward(const T* dy, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo,
                                 T* dx, Stream stream);

}  // namespace seg::cuda
