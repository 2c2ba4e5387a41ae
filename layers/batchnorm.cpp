#include "layers/batchnorm.h"

namespace seg {

BatchNorm2d::BatchNorm2d(int64_t channels, double momentum_, double eps_) : momentum(momentum_), eps(eps_) {
  weight = Tensor::full({channels}, 1.0, DType::f32, Device::cpu());
  bias = Tensor::zeros({channels}, DType::f32, Device::cpu());
  running_mean = Tensor::zeros({channels}, DType::f32, Device::cpu());
  running_var = Tensor::full({channels}, 1.0, DType::f32, Device::cpu());
  num_batches_tracked = Tensor::zeros(Shape{}, DType::i64, Device::cpu());
  register_parameter("weight", &weight);
  register_parameter("bias", &bias);
  register_buffer("running_mean", &running_mean);
  register_buffer("running_var", &running_var);
  // A host counter (only checkpoints read it): it stays on the CPU whatever the model's device.
  register_buffer("num_batches_tracked", &num_batches_tracked, /*host=*/true);
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  ops::BatchNormOptions opt;
  opt.training = is_training();
  opt.momentum = momentum;
  opt.eps = eps;
  opt.reducer = reducer;
  Tensor y = ops::batch_norm(x, weight, bias, running_mean, running_var, opt);
  if (opt.training) ++num_batches_tracked.data<int64_t>()[0];
  return y;
}

}  // namespace seg
