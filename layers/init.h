// Parameter initialisation, drawn from Philox with the `init` purpose (core/rng.h): the same seed
// gives the same model on every machine and thread count.
#pragma once

#include <cstdint>

#include "core/rng.h"
#include "core/tensor.h"

namespace seg::init {

// N(0, std^2) for every element.
void normal_(Tensor& t, double std, PhiloxStream& rng);
// U(-bound, bound).
void uniform_(Tensor& t, double bound, PhiloxStream& rng);
// He/Kaiming normal, fan_in mode, gain sqrt(2) (ReLU): std = sqrt(2 / fan_in). Upstream decoders.
void kaiming_normal_(Tensor& t, int64_t fan_in, PhiloxStream& rng);
// PyTorch's default conv/linear init: weight and bias U(+-1/sqrt(fan_in)) (kaiming_uniform with a=sqrt(5)).
void pytorch_default_conv_(Tensor& weight, Tensor* bias, int64_t fan_in, PhiloxStream& rng);

}  // namespace seg::init
