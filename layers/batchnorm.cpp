#include "layers/batchnorm.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

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

namespace {
std::atomic<int> g_fusion{-1};  // -1: not yet read from the environment
}  // namespace

bool bn_activation_fusion() {
  int v = g_fusion.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* e = std::getenv("SEG_FUSE_BN_ACT");
    v = e != nullptr && std::strcmp(e, "0") == 0 ? 0 : 1;
    g_fusion.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

void set_bn_activation_fusion(bool on) { g_fusion.store(on ? 1 : 0, std::memory_order_relaxed); }

Tensor BatchNorm2d::forward(const Tensor& x) { return forward_act(x, BnActivation::none); }

Tensor BatchNorm2d::forward_act(const Tensor& x, BnActivation act) {
  if (act != BnActivation::none && !bn_activation_fusion()) {
    const Tensor y = forward(x);
    return act == BnActivation::relu6 ? ops::relu6(y) : ops::relu(y);
  }
  ops::BatchNormOptions opt;
  opt.act = act;
  opt.training = is_training();
  opt.momentum = momentum;
  opt.eps = eps;
  opt.reducer = reducer;
  Tensor y = ops::batch_norm(x, weight, bias, running_mean, running_var, opt);
  if (opt.training) ++num_batches_tracked.data<int64_t>()[0];
  return y;
}

}  // namespace seg
