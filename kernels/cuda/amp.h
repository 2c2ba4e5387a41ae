// CUDA mixed-precision kernels: the fused gradient unscale with a device found-inf flag, the f32
// master-weight SGD step that refreshes the half copy, SGD on half parameters, and the fp16 range
// statistics of --amp-stats: the twins of kernels/cpu/amp.h. H in {f16, bf16}.
//
//   unscale:  g32[i] = float(g[i]) * inv_scale;   found_inf |= !isfinite(g32[i])   (the f32 value is
//             tested, also where the half store then rounds it to inf, as on the CPU)
//   master:   d = g32 + wd*m;  buf = mom*buf + d;  m -= lr*buf;  p_half = round(m)
//   half:     b = mom*buf + g + wd*p (f32, left to right); buf = round(b); p = round(p - lr*buf)
//   range:    counts of exact zeros, of nonzero |g|*scale <= 2^-25 (flush to 0 in f16) and of
//             |g|*scale >= 65520 (round to inf), computed in f64 as on the CPU; NaN counts in none
//
// Difference from the CPU: the CPU's unscale functions return a bool and fp16_range returns the
// counts. Returning a value would need a host synchronisation per tensor, so here
//   found_inf (one int in device memory) is set to 1 when a non-finite value is seen and is never
//   cleared: the caller zeroes it once per step (cudaMemsetAsync), runs the unscale of every
//   gradient, and reads it back once with the loss and accuracy (DESIGN 13: one read-back per step);
//   fp16_range writes its Fp16Range (the CPU struct, 4 x int64) to device memory.
// The flag is an integer OR: each block ORs __syncthreads_or of its threads' findings into it with
// one atomicOr by thread 0. Integer atomics are order-independent, so this stays deterministic.
//
// Bits: identical to the CPU everywhere (single-rounding arithmetic, see storage_access.cuh).
// Launch: 256 threads per block, grid = ceil(packs / 256) capped at 1024, grid-stride; a thread
// handles a pack of 4 elements per step (16 bytes of every f32 array, 8 of every half one) when all
// pointers reach pack alignment at the same element (scalar head and tail), else one element.
// fp16_range: a deterministic two-pass count (G = min(ceil(n / 4096), 512) blocks of 256 threads,
// then one block over the G partials), workspace fp16_range_workspace_bytes(n) = 24 G bytes.
// Memory traffic per element: unscale in place 8 bytes (f32) or 4 (half); unscale to f32 2 + 4;
// master step read m, g32, buf and write m, buf, p_half: 22 bytes; half step 10 bytes; range 4.
// Device pointers; no synchronisation, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/half.h"
#include "kernels/cpu/amp.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

using Fp16Range = ::seg::cpu::Fp16Range;

// In place on f32 (O1: fp32 parameters with scaled fp32 gradients).
void unscale_inplace_check(float* g, int64_t n, float inv_scale, int* found_inf, Stream stream);
// Half gradients into f32 buffers (O2: master gradients).
template <class H> void unscale_to_f32_check(const H* g, float* out, int64_t n, float inv_scale, int* found_inf,
                                             Stream stream);
// In place on half gradients (O3 with a loss scale).
template <class H> void unscale_half_inplace_check(H* g, int64_t n, float inv_scale, int* found_inf, Stream stream);

template <class H>
void sgd_master_step(float* master, const float* grad, float* buf, H* half_copy, int64_t n, double lr,
                     double momentum, double weight_decay, Stream stream);

template <class H>
void sgd_half_step(H* p, const H* grad, H* buf, int64_t n, double lr, double momentum, double weight_decay,
                   Stream stream);

size_t fp16_range_workspace_bytes(int64_t n);
// *out = {zero, underflow, overflow, total = n} in device memory.
void fp16_range(const float* g, int64_t n, double scale, Fp16Range* out, void* workspace, Stream stream);

}  // namespace seg::cuda
