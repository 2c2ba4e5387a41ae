// CUDA softmax, log-softmax and argmax over the channels of [P, C]: the twins of kernels/cpu/softmax.h.
//
//   softmax:     y = exp(x - max) / sum exp(x - max)      dx = y * (dy - sum_c dy*y)
//   log_softmax: y = x - max - log sum exp(x - max)        dx = dy - exp(y) * sum_c dy
//   argmax:      index of the first maximum, a NaN winning (the first NaN), int32 out [P]
// x, y, dy, dx [P, C] contiguous, C innermost (P = N*H*W pixels of a channels-last tensor);
// T in {float, f16, bf16}, arithmetic in f32 (expf/logf, not the fast intrinsics), rounded once on
// store. A NaN or +inf anywhere in a row makes that row's softmax NaN, as on the CPU.
//
// Launch: row groups (kernels/cuda/channel_rows.cuh): G = min(32, next power of two >= C) lanes per
// row, 256 threads per block (256 / G rows per step), grid = ceil(P / (256 / G)) capped at 1024,
// grid-stride over rows. Each lane strides the channels by G, so the warp's accesses are G adjacent
// elements (coalesced); max and sums are butterfly shuffles within the group, so no shared memory
// and no barriers. Forward reads the row three times (max, sum, write: the 2nd and 3rd reads hit
// L1 for rows up to tens of KB), backward twice.
// Memory traffic from DRAM: forward read x + write y (P*C*2*sizeof(T)); backward read y, dy, write dx
// (3*sizeof(T) per element); argmax read x, write 4 bytes per row. Bandwidth-bound for C >= 32;
// for small C, lanes of the group beyond C idle (C = 3 uses 3 of 4).
// Results against the CPU: argmax is exact; softmax differs by the order of the channel sum (strided
// lanes then a tree, vs sequential) and by the GPU's expf/logf (<= 2 ulp): relative differences
// below (2C + 16) * 2^-24, see tests/kernels/cuda/test_softmax.cpp for the stated bounds.
// Deterministic: fixed order for a given C. Device pointers; no synchronisation, no allocation.
#pragma once

#include <cstdint>

#include "kernels/common/half.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

template <class T> void softmax_forward(const T* x, int64_t P, int64_t C, T* y, bool log, Stream stream);
template <class T> void softmax_backward(const T* y, const T* dy, int64_t P, int64_t C, T* dx, bool log, Stream stream);
template <class T> void argmax_channels(const T* x, int64_t P, int64_t C, int32_t* out, Stream stream);

}  // namespace seg::cuda
