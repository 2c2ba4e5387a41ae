// Bulk conversions between float and the 16-bit storage types, contiguous arrays of n elements.
//
// Paths: scalar (kernels/common/half.h), AVX2+F16C, AVX-512; chosen by cpu_isa(). All paths give
// the same bits for every non-NaN input (round to nearest even, overflow to inf, subnormals kept).
// NaN stays NaN, but the SIMD f16 paths keep the NaN payload where the scalar path (like CUDA's host
// code) returns the canonical NaN.
// Memory traffic: n * (4 + 2) bytes, one pass; bandwidth-bound above a few thousand elements.
#pragma once

#include <cstdint>

#include "kernels/common/half.h"

namespace seg::cpu {

void convert_f32_to_f16(const float* src, f16* dst, int64_t n);
void convert_f16_to_f32(const f16* src, float* dst, int64_t n);
void convert_f32_to_bf16(const float* src, bf16* dst, int64_t n);
void convert_bf16_to_f32(const bf16* src, float* dst, int64_t n);

}  // namespace seg::cpu
