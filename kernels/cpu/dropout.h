// Dropout2d: zeroes whole channels of each sample (upstream Dropout2d(0.1) in the PPM heads).
//
//   keep[n, c] = u(n, c) >= p   with u from Philox(key, counter = (n*C + c, stream))
//   y[n,h,w,c] = x[n,h,w,c] * keep[n,c] / (1 - p);   dx = dy * keep[n,c] / (1 - p)
// The mask depends only on (key, stream, n, c), never on threads or devices.
#pragma once

#include <cstdint>

#include "kernels/common/philox.h"

namespace seg::cpu {

// keep[n*C + c] = 0 or 1.
void dropout2d_mask(PhiloxKey key, uint64_t stream, int64_t N, int64_t C, double p, uint8_t* keep);

// y = x * keep[n, c] * scale over x [N, HW, C] (scale = 1/(1-p), applied in the arithmetic type).
template <class T>
void dropout2d_apply(const T* x, const uint8_t* keep, double scale, int64_t N, int64_t HW, int64_t C, T* y);

}  // namespace seg::cpu
