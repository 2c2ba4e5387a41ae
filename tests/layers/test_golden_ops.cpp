// Ops against PyTorch 1.13 (goldens from tools/golden/make_op_goldens.py), float32 on both sides.
//
// Tolerances (stated per check below) allow for different summation orders in f32:
//   |ours - torch| <= atol + rtol * max|torch| over the whole tensor.
#include <doctest/doctest.h>

#include <string>

#include "core/autograd.h"
#include "core/fileio.h"
#include "core/npy.h"
#include "core/rng.h"
#include "layers/ops.h"
#include "tests/layers/test_helpers.h"

using namespace seg;

namespace {
std::string golden(const std::string& name, const std::string& file) {
  return std::string(SEG_SOURCE_DIR) + "/tests/golden/ops/" + name + "/" + file + ".npy";
}
Tensor load(const std::string& name, const std::string& file) { return read_npy(golden(name, file)); }

void check_close(const Tensor& ours, const Tensor& torch, double atol, double rtol, const char* what) {
  CAPTURE(what);
  REQUIRE(ours.shape() == torch.shape());
  const auto a = ours.to(DType::f64).to_vector<double>(), b = torch.to(DType::f64).to_vector<double>();
  double max_ref = 0, max_err = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_ref = std::max(max_ref, std::abs(b[i]));
    max_err = std::max(max_err, std::abs(a[i] - b[i]));
  }
  CAPTURE(max_err);
  CAPTURE(max_ref);
  CHECK(max_err <= atol + rtol * max_ref);
}

Tensor leaf(Tensor t) {
  t.set_requires_grad(true);
  return t;
}
}  // namespace

TEST_CASE("conv2d matches PyTorch: dilated, strided grouped, depthwise stride 2, 1x1 stride 2") {
  for (const char* name : {"conv_dilated", "conv_strided_grouped", "conv_depthwise_s2", "conv_1x1_s2"}) {
    CAPTURE(name);
    const Tensor p = load(name, "params");  // stride, pad, dilation, groups
    const int32_t* q = p.data<int32_t>();
    Tensor x = leaf(load(name, "x")), w = leaf(load(name, "w"));
    const bool has_bias = file_exists(golden(name, "b"));
    Tensor b = has_bias ? leaf(load(name, "b")) : Tensor();
    const Tensor y = ops::conv2d(x, w, b, ops::Conv2dOptions::square(q[0], q[1], q[2], q[3]));
    check_close(y, load(name, "y"), 1e-5, 1e-5, "y");
    y.backward(load(name, "dy"));
    check_close(x.grad(), load(name, "dx"), 1e-5, 1e-5, "dx");
    check_close(w.grad(), load(name, "dw"), 1e-5, 1e-5, "dw");
    if (has_bias) check_close(b.grad(), load(name, "db"), 1e-5, 1e-5, "db");
  }
}

TEST_CASE("batch_norm matches PyTorch in train mode (with running statistics) and eval mode") {
  for (const char* name : {"batchnorm_train", "batchnorm_eval"}) {
    CAPTURE(name);
    const bool training = std::string(name) == "batchnorm_train";
    Tensor x = leaf(load(name, "x")), g = leaf(load(name, "gamma")), b = leaf(load(name, "beta"));
    Tensor rm = load(name, "running_mean"), rv = load(name, "running_var");
    ops::BatchNormOptions opt;
    opt.training = training;
    opt.momentum = 0.1;
    const Tensor y = ops::batch_norm(x, g, b, rm, rv, opt);
    check_close(y, load(name, "y"), 1e-5, 1e-5, "y");
    check_close(rm, load(name, "running_mean_after"), 1e-6, 1e-6, "running_mean");
    check_close(rv, load(name, "running_var_after"), 1e-6, 1e-6, "running_var");
    y.backward(load(name, "dy"));
    check_close(x.grad(), load(name, "dx"), 1e-5, 1e-5, "dx");
    check_close(g.grad(), load(name, "dgamma"), 1e-5, 1e-5, "dgamma");
    check_close(b.grad(), load(name, "dbeta"), 1e-5, 1e-5, "dbeta");
  }
}

TEST_CASE("pooling, resize and softmax match PyTorch, forward and backward") {
  struct UnaryGolden {
    const char* name;
    std::function<Tensor(const Tensor&)> fn;
  };
  const std::vector<UnaryGolden> cases = {
      {"maxpool_3x3_s2_p1", [](const Tensor& t) { return ops::max_pool2d(t, 3, 2, 1); }},
      {"adaptive_avgpool_1", [](const Tensor& t) { return ops::adaptive_avg_pool2d(t, 1, 1); }},
      {"adaptive_avgpool_2", [](const Tensor& t) { return ops::adaptive_avg_pool2d(t, 2, 2); }},
      {"adaptive_avgpool_3", [](const Tensor& t) { return ops::adaptive_avg_pool2d(t, 3, 3); }},
      {"adaptive_avgpool_6", [](const Tensor& t) { return ops::adaptive_avg_pool2d(t, 6, 6); }},
      {"resize_up_13x17", [](const Tensor& t) { return ops::resize_bilinear(t, 13, 17); }},
      {"resize_down_5x7", [](const Tensor& t) { return ops::resize_bilinear(t, 5, 7); }},
      {"softmax", [](const Tensor& t) { return ops::softmax(t); }},
      {"log_softmax", [](const Tensor& t) { return ops::log_softmax(t); }},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    Tensor x = leaf(load(c.name, "x"));
    const Tensor y = c.fn(x);
    check_close(y, load(c.name, "y"), 1e-6, 1e-6, "y");
    y.backward(load(c.name, "dy"));
    check_close(x.grad(), load(c.name, "dx"), 1e-6, 1e-6, "dx");
  }
}

TEST_CASE("softmax_nll_loss matches PyTorch's nll_loss(log_softmax, ignore_index=-1)") {
  Tensor logits = leaf(load("softmax_nll", "logits"));
  const Tensor loss = ops::softmax_nll_loss(logits, load("softmax_nll", "labels"));
  check_close(loss, load("softmax_nll", "loss"), 1e-6, 1e-6, "loss");
  loss.backward();
  check_close(logits.grad(), load("softmax_nll", "dlogits"), 1e-7, 1e-6, "dlogits");
}
