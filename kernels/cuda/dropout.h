// CUDA Dropout2d: the twins of kernels/cpu/dropout.h (upstream Dropout2d(0.1) in the PPM heads).
//
//   keep[n, c] = u(n, c) >= p   with u = philox_uniform(Philox4x32-10(counter = (n*C + c, philox_stream),
//                               key).c[0]) (kernels/common/philox.h), compared in f64 as on the CPU
//   y[n,h,w,c] = keep[n,c] ? x[n,h,w,c] * float(scale) : 0   (forward with x, backward with dy)
// The mask is drawn on the device and is bit-identical to the CPU's for the same key and stream:
// the generator is a pure function of (counter, key), so no state is copied to the device. (The
// CPU header calls the Philox stream `stream`; here that name is the CUDA stream.)
// x, y [N, HW, C] contiguous (channels-last), keep [N, C] uint8 0/1; T in {float, f16, bf16}.
//
// dropout2d_mask: one thread per (n, c), 256 threads per block, grid = ceil(N*C / 256) capped at
//   1024, grid-stride. N*C is a few thousand, so this is one small launch; traffic N*C bytes written.
// dropout2d_apply: 256 threads per block, grid = ceil(work / 256) capped at 1024, grid-stride; a
//   thread handles a 16-byte pack (4 f32 or 8 halves) of one pixel's channels per step when C is a
//   multiple of the pack and x, y are 16-byte aligned (the PPM heads have C = 512), else one
//   element. keep is re-read per pack from L1/L2 (N*C bytes, cache-resident). Traffic: read x,
//   write y (8 bytes per f32 element, 4 per half) plus the mask; bandwidth-bound. Bit-identical to
//   the CPU (one rounded f32 multiply).
// Device pointers; no synchronisation, no allocation.
#pragma once

#include <cstdint>

#include "kernels/common/half.h"
#include "kernels/common/philox.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

void dropout2d_mask(PhiloxKey key, uint64_t philox_stream, int64_t N, int64_t C, double p, uint8_t* keep,
                    Stream stream);

template <class T>
void dropout2d_apply(const T* x, const uint8_t* keep, double scale, int64_t N, int64_t HW, int64_t C, T* y,
                     Stream stream);

}  // namespace seg::cuda
