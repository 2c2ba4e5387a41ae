#include "layers/init.h"

#include <cmath>

namespace seg::init {

namespace {
// Draws in f64 on the CPU and converts once, so f16/bf16/f32 models start from the same values.
template <class Draw>
void fill(Tensor& t, Draw draw) {
  Tensor tmp = Tensor::empty(t.shape(), DType::f64, Device::cpu());
  double* p = tmp.data<double>();
  for (int64_t i = 0; i < tmp.numel(); ++i) p[i] = draw();
  t.copy_(tmp);
}
}  // namespace

void normal_(Tensor& t, double std, PhiloxStream& rng) {
  fill(t, [&] { return std * static_cast<double>(rng.normal()); });
}

void uniform_(Tensor& t, double bound, PhiloxStream& rng) {
  fill(t, [&] { return bound * (2.0 * rng.uniform_f64() - 1.0); });
}

void kaiming_normal_(Tensor& t, int64_t fan_in, PhiloxStream& rng) {
  normal_(t, std::sqrt(2.0 / static_cast<double>(fan_in)), rng);
}

void pytorch_default_conv_(Tensor& weight, Tensor* bias, int64_t fan_in, PhiloxStream& rng) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  uniform_(weight, bound, rng);
  if (bias && bias->defined()) uniform_(*bias, bound, rng);
}

}  // namespace seg::init
