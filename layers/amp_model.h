// Preparing a model for a mixed-precision level (core/amp_policy.h):
//   O0, O1: nothing (weights stay fp32; O1 casts per op through layers/autocast.h).
//   O2: every parameter and floating buffer becomes half, except BatchNorm's, which stay fp32
//       (Apex's keep_batchnorm_fp32); the optimizer must then be built with master weights.
//   O3: everything becomes half, BatchNorm included.
// Call it before building the optimizer, which captures the parameter tensors.
#pragma once

#include "core/amp_policy.h"
#include "layers/module.h"

namespace seg {

// Returns the number of tensors converted.
int cast_model_for_amp(Module& model, const AmpConfig& config);

// The dtype a model's input images should have for the level (half for O2/O3, else f32).
DType amp_input_dtype(const AmpConfig& config);

}  // namespace seg
