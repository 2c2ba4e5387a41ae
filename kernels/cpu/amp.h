// Mixed-precision kernels: the fused gradient unscale with inf/NaN detection, and the fp32
// master-weight SGD step that refreshes the half copy in the same pass.
//
//   unscale:  g32[i] = float(g[i]) * inv_scale;   found_inf |= !isfinite(g32[i])
//   master:   d = g32 + wd*m;  buf = mom*buf + d;  m -= lr*buf;  p_half = round(m)
//
// Why one pass each: the unscale must see every gradient before the step may run (a single inf
// anywhere skips the whole step), and the master update must leave the half copy consistent.
// Memory traffic: unscale reads g and writes g32 once; the master step reads m, g32, buf and writes
// m, buf, p_half. All bandwidth-bound. Deterministic: found_inf is an OR.
#pragma once

#include <cstdint>

#include "kernels/common/half.h"

namespace seg::cpu {

// In place on f32 (O1: fp32 parameters with scaled fp32 gradients). Returns true if any is inf/NaN.
bool unscale_inplace_check(float* g, int64_t n, float inv_scale);
// Half gradients into f32 buffers (O2: master gradients). Returns true if any is inf/NaN.
template <class H> bool unscale_to_f32_check(const H* g, float* out, int64_t n, float inv_scale);
// In place on half gradients (O3 with a loss scale). Returns true if any is inf/NaN.
template <class H> bool unscale_half_inplace_check(H* g, int64_t n, float inv_scale);

template <class H>
void sgd_master_step(float* master, const float* grad, float* buf, H* half_copy, int64_t n, double lr,
                     double momentum, double weight_decay);

// SGD directly on half parameters, gradients and momentum (O3), arithmetic in f32.
template <class H>
void sgd_half_step(H* p, const H* grad, H* buf, int64_t n, double lr, double momentum, double weight_decay);

// Counts for the --amp-stats teaching tool: how many |g| (true, unscaled gradients) would become 0
// in f16 (|g*scale| < 2^-24, the smallest subnormal) or inf (|g*scale| > 65504), at `scale`.
struct Fp16Range {
  int64_t zero = 0;       // exact zeros in the f32 gradient (not an underflow)
  int64_t underflow = 0;  // nonzero values that would flush to 0
  int64_t overflow = 0;   // values that would become inf
  int64_t total = 0;
};
Fp16Range fp16_range(const float* g, int64_t n, double scale);

}  // namespace seg::cpu
