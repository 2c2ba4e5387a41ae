// CUDA bulk conversions between f32 and the 16-bit storage types: the twins of kernels/cpu/convert.h.
//
//   dst[i] = round_to_nearest_even(src[i])  (f32 -> f16/bf16; overflow to inf, subnormals kept)
//   dst[i] = src[i]                          (f16/bf16 -> f32, exact)
// over contiguous arrays of n elements: the casts of autocast and of the master weights. They are
// the contiguous path of copy_strided (kernels/cuda/copy.h, defined in copy.cu): 16-byte vector
// accesses on the f32 side (4 elements per thread and step) when src and dst reach alignment at the
// same element, scalar otherwise; 256 threads per block, at most 1024 blocks, grid-stride.
// Bits: identical to the CPU for every non-NaN input; NaN stays NaN (payloads may differ, as between
// the CPU's own scalar and SIMD paths).
// Memory traffic: n * (4 + 2) bytes, one pass. Device pointers; no synchronisation, no allocation.
#pragma once

#include <cstdint>

#include "kernels/common/half.h"
#include "kernels/cuda/stream.h"

namespace seg::cuda {

void convert_f32_to_f16(const float* src, f16* dst, int64_t n, Stream stream);
void convert_f16_to_f32(const f16* src, float* dst, int64_t n, Stream stream);
void convert_f32_to_bf16(const float* src, bf16* dst, int64_t n, Stream stream);
void convert_bf16_to_f32(const bf16* src, float* dst, int64_t n, Stream stream);

}  // namespace seg::cuda
