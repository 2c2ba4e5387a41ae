// 16-bit floating-point storage types: seg::f16 (IEEE binary16) and seg::bf16 (bfloat16).
//
// Why our own types: the CPU backend stores half tensors too, and must build without the CUDA
// toolkit. Both types are plain 16-bit patterns, bit-compatible with CUDA's __half and
// __nv_bfloat16, so a buffer written by one side is read unchanged by the other.
// They are storage types only: arithmetic happens in float (DESIGN decision 4).
//
//   f16 : 1 sign | 5 exponent (bias 15)  | 10 mantissa   range +-65504, eps 2^-10
//   bf16: 1 sign | 8 exponent (bias 127) |  7 mantissa   range ~ +-3.4e38 (as float), eps 2^-7
//
// Conversions round to nearest, ties to even, exactly like CUDA's __float2half / __float2bfloat16
// on the host: overflow goes to +-inf, every NaN becomes the canonical 0x7FFF, and f16 -> float
// maps every NaN to 0x7FFFFFFF. tests/core/test_half.cpp checks this bit for bit against CUDA's
// own headers (all 65536 halves; every rounding boundary of float -> half).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/common/hostdevice.h"

namespace seg {

SEG_HD_INLINE uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
SEG_HD_INLINE float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// float -> binary16, round to nearest even.
SEG_HD_INLINE uint16_t f32_to_f16_bits(float value) {
  const uint32_t x = float_bits(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t mag = x & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return 0x7FFFu;                       // NaN -> canonical NaN
  if (mag >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (mag >= 0x38800000u) {                                     // normal half (>= 2^-14)
    // Re-bias the exponent (127 -> 15) and drop 13 mantissa bits with round-to-nearest-even:
    // adding 0xFFF plus the lowest kept bit rounds ties to even.
    const uint32_t rebased = mag - 0x38000000u;
    const uint32_t lsb = (rebased >> 13) & 1u;
    return static_cast<uint16_t>(sign | ((rebased + 0xFFFu + lsb) >> 13));
  }
  if (mag <= 0x33000000u) return static_cast<uint16_t>(sign);   // <= 2^-25 (a tie) rounds to 0
  // Subnormal half: value = m * 2^-24 with m < 1024. Shift the full 24-bit significand right so
  // that one unit is 2^-24, and round on the bits shifted out.
  const uint32_t exp = mag >> 23;                               // 102 .. 112
  const uint32_t significand = (mag & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exp;                            // 14 .. 24
  const uint32_t kept = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half_way = 1u << (shift - 1u);
  const uint32_t round_up = (rest > half_way) || (rest == half_way && (kept & 1u));
  return static_cast<uint16_t>(sign | (kept + round_up));
}

// binary16 -> float (exact; NaN becomes the canonical 0x7FFFFFFF like CUDA's host path).
SEG_HD_INLINE float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1Fu) return bits_float(mant ? 0x7FFFFFFFu : (sign | 0x7F800000u));
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  // Subnormal: normalise the mantissa; each shift lowers the float exponent by one.
  uint32_t e = 113u;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bits_float(sign | (e << 23) | ((mant & 0x3FFu) << 13));
}

// float -> bfloat16, round to nearest even (the top 16 bits of the float, rounded).
SEG_HD_INLINE uint16_t f32_to_bf16_bits(float value) {
  const uint32_t x = float_bits(value);
  const uint32_t lsb = (x >> 16) & 1u;
  const uint32_t rounded = (x + 0x7FFFu + lsb) >> 16;
  // Written as a select, not an early return, so loops over it vectorise.
  return static_cast<uint16_t>((x & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FFFu : rounded);
}

SEG_HD_INLINE float bf16_bits_to_f32(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

struct f16 {
  uint16_t bits;
  f16() = default;
  SEG_HD explicit f16(float v) : bits(f32_to_f16_bits(v)) {}
  SEG_HD operator float() const { return f16_bits_to_f32(bits); }
  SEG_HD static f16 from_bits(uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
};

struct bf16 {
  uint16_t bits;
  bf16() = default;
  SEG_HD explicit bf16(float v) : bits(f32_to_bf16_bits(v)) {}
  SEG_HD operator float() const { return bf16_bits_to_f32(bits); }
  SEG_HD static bf16 from_bits(uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(f16) == 2 && sizeof(bf16) == 2, "16-bit storage types must be 2 bytes");

}  // namespace seg
