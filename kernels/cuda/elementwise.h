// CUDA elementwise kernels and the all-element sum: the twins of kernels/cpu/elementwise.h.
//
// T in {float, f16, bf16} (storage); arithmetic in f32, rounded once on store. Contiguous arrays of
// n elements; out may alias an input (add_inplace is add with out = dst), nothing else may overlap.
//
//   add(a, b, out)            out = a + b
//   add_inplace(dst, src)     dst += src          (the autograd engine's gradient accumulation)
//   mul(a, b, out)            out = a * b
//   scale(a, s, out)          out = a * float(s)
//   relu_forward(x, y, relu6)   y = max(x, 0) [min(., 6)]: the CPU's std::max/std::min order, so NaN
//                               propagates and -0 stays -0, bit for bit as on the CPU
//   relu_backward(x, dy, dx, relu6)  dx = x > 0 [&& x < 6] ? dy : 0, a select: 0 where x <= 0 even if
//                               dy is inf or NaN, and a NaN x passes no gradient (PyTorch's
//                               threshold_backward, and the CPU kernel)
//   sum(a, n, factor, out, workspace)  out[0] = T(f32 sum of a * factor): sum (factor 1) and mean
//                               (factor 1/n) to one element on the device, no read-back
//   fill_from_device_scalar(scalar, factor, out, n)  out[i] = T(float(double(scalar[0]) * factor)):
//                               the backward of sum/mean (Tensor::full(shape, g.item() * factor) on
//                               the CPU) without reading g back to the host. Device-only addition.
// Results are bit-identical to the CPU kernels for everything but sum (the CPU sums in f64 in its
// own order): single-rounding intrinsics keep nvcc from contracting a*b+c into an fma.
//
// Launch (maps): 256 threads per block, each thread a 16-byte pack per step (4 f32 or 8 halves)
// when every pointer reaches pack alignment at the same element (a scalar head of < 8 elements
// first, a scalar tail after), else one element per step; grid = ceil(packs / 256) capped at 1024
// blocks (about one full wave of an H100/H200), grid-stride loops beyond. Memory traffic per element: add/mul/relu_backward read 2 and
// write 1 element (12 bytes f32, 6 bytes half), scale/relu_forward read 1 write 1; bandwidth-bound.
//
// sum: a deterministic two-pass reduction. Pass 1: G = min(ceil(n / 4096), 512) blocks of 256
// threads; each thread adds its grid-stride elements in f32 (in packs when aligned), the block
// reduces by warp shuffles (butterfly, so every lane holds the same bits) and warp order, and
// writes one f32 partial to workspace[block]. Pass 2: one block of 256 threads adds the G partials
// in a fixed order and writes out. The partition depends only on n, so the result is the same bits
// on every run and every GPU. A single pass with float atomicAdd on one accumulator would save the
// second launch (a few microseconds) but the order of the additions, and so the bits, would change
// from run to run; --deterministic forbids that (DESIGN 11), so no float atomics are used.
// Error: each partial adds at most ceil(n / (256 G)) elements, then 8 + 10 tree levels, so
// |sum - exact| <= (ceil(n / (256 G)) + 18) * 2^-24 * sum |a_i| (plus the final rounding to T).
// Workspace: sum_workspace_bytes(n) (= 4 G bytes). Traffic: n * sizeof(T) bytes read.
//
// Pointers are device pointers; no synchronisation, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/half.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

template <class T> void add(const T* a, const T* b, T* out, int64_t n, Stream stream);
template <class T> void add_inplace(T* dst, const T* src, int64_t n, Stream stream);
template <class T> void mul(const T* a, const T* b, T* out, int64_t n, Stream stream);
template <class T> void scale(const T* a, double s, T* out, int64_t n, Stream stream);
template <class T> void relu_forward(const T* x, T* y, int64_t n, bool relu6, Stream stream);
template <class T> void relu_backward(const T* x, const T* dy, T* dx, int64_t n, bool relu6, Stream stream);

size_t sum_workspace_bytes(int64_t n);
template <class T> void sum(const T* a, int64_t n, double factor, T* out, void* workspace, Stream stream);

template <class T> void fill_from_device_scalar(const T* scalar, double factor, T* out, int64_t n, Stream stream);

}  // namespace seg::cuda
