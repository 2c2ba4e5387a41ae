// Division by a divisor that is fixed for a whole kernel, as one multiply-high and one shift.
//
// Why: a GPU has no integer divide instruction; `k / Cg` with a runtime Cg compiles to a software
// routine of about twenty instructions. The implicit-GEMM sources (kernels/cuda/gemm/
// operand_source.h) split a K index into (tap, channel) and a tap into (kh, kw) when a thread's
// cursor is made, and backward data divides a tap's offsets by the strides each time its cursor
// reaches a new tap: in or next to the GEMM's main loop, where issue slots are what the tensor
// cores wait for (docs/tensor-cores.md, "The main loop's instruction budget"). The element-wise
// fallback splits every element's index.
//
// The math (Granlund and Montgomery, "Division by invariant integers using multiplication", 1994):
// for a divisor d >= 2 let l = ceil(log2 d) and m = ceil(2^(31+l) / d), which fits in 32 bits.
// Then for every 0 <= n < 2^31
//     floor(n / d) = floor(n * m / 2^(31+l)) = umulhi(n, m) >> (l - 1).
// Proof sketch: m*d = 2^(31+l) + e with 0 <= e < d, so n*m / 2^(31+l) = n/d + n*e / (d 2^(31+l)); the
// second term is below 2^31 * d / (d 2^(31+l)) = 2^-l <= 1/d, and the fraction of n/d is at most
// (d-1)/d, so adding it never reaches the next integer. d = 1 is the identity (m would need 33 bits).
// tests/kernels/test_fast_divmod.cpp checks it against / and % for every divisor up to 4096 and the
// edge dividends, and the convolutions' simulator tests check every element that uses it.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "kernels/common/hostdevice.h"

namespace seg {

struct FastDivmod {
  int32_t d = 1;
  uint32_t mul = 0;    // m (unused when d == 1)
  uint32_t shift = 0;  // l - 1

  FastDivmod() = default;
  explicit FastDivmod(int32_t divisor) : d(divisor) {
    if (divisor < 1) throw std::invalid_argument("FastDivmod: the divisor must be at least 1");
    if (divisor == 1) return;
    uint32_t l = 0;
    while ((uint64_t{1} << l) < static_cast<uint64_t>(divisor)) ++l;  // ceil(log2 d), >= 1
    const uint64_t two_p = uint64_t{1} << (31 + l);
    mul = static_cast<uint32_t>((two_p + static_cast<uint64_t>(divisor) - 1) / static_cast<uint64_t>(divisor));
    shift = l - 1;
  }

  // floor(n / d) for 0 <= n < 2^31.
  SEG_HD_INLINE int32_t div(int32_t n) const {
    if (d == 1) return n;
    const uint32_t hi = static_cast<uint32_t>((static_cast<uint64_t>(static_cast<uint32_t>(n)) * mul) >> 32);
    return static_cast<int32_t>(hi >> shift);
  }
  // q = floor(n / d), r = n - q * d, for 0 <= n < 2^31.
  SEG_HD_INLINE void divmod(int32_t n, int32_t& q, int32_t& r) const {
    q = div(n);
    r = n - q * d;
  }
};

}  // namespace seg
