// Ops against PyTorch 1.13 (goldens from tools/golden/make_op_goldens.py): each case runs here in
// float32 (the production dtype) and in float64, against PyTorch's float64 result.
//
// Bounds (tests/common/golden_bounds.h): float32 within 8 times PyTorch's own float32 error on the
// same case (per element and over the whole tensor), float64 within the golden files' float32
// storage rounding. SEG_GOLDEN_VERBOSE=1 prints, per result, our error next to PyTorch's.
#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <string>

#include "core/autograd.h"
#include "core/fileio.h"
#include "core/npy.h"
#include "layers/ops.h"
#include "tests/common/compare_tensor.h"
#include "tests/common/golden_bounds.h"

using namespace seg;

namespace {
std::string golden_dir(const std::string& name) { return std::string(SEG_SOURCE_DIR) + "/tests/golden/ops/" + name; }

// One golden case in one dtype: loads inputs in that dtype, compares results with their bound.
class GoldenCase {
 public:
  GoldenCase(const std::string& name, DType dt) : name_(name), dt_(dt), errors_(test::read_f32_errors(golden_dir(name))) {}
  bool has(const std::string& file) const { return file_exists(path(file)); }
  Tensor raw(const std::string& file) const { return read_npy(path(file)); }
  Tensor input(const std::string& file) const { return raw(file).to(dt_); }
  Tensor leaf(const std::string& file) const {
    Tensor t = input(file);
    t.set_requires_grad(true);
    return t;
  }
  void check(const Tensor& ours, const std::string& key) const {
    CAPTURE(name_);
    REQUIRE_MESSAGE(errors_.count(key), "no f32_error.json entry for " << key);
    test::golden_check(ours, raw(key), errors_.at(key), dt_, key);
  }

 private:
  std::string path(const std::string& file) const { return golden_dir(name_) + "/" + file + ".npy"; }
  std::string name_;
  DType dt_;
  std::map<std::string, test::TorchF32Error> errors_;
};

const DType kDtypes[] = {DType::f32, DType::f64};
}  // namespace

TEST_CASE("conv2d matches PyTorch: dilated, strided grouped, depthwise stride 2, 1x1 stride 2") {
  for (DType dt : kDtypes)
    for (const char* name : {"conv_dilated", "conv_strided_grouped", "conv_depthwise_s2", "conv_1x1_s2"}) {
      const GoldenCase g(name, dt);
      const Tensor p = g.raw("params");  // stride, pad, dilation, groups
      const int32_t* q = p.data<int32_t>();
      Tensor x = g.leaf("x"), w = g.leaf("w");
      const bool has_bias = g.has("b");
      Tensor b = has_bias ? g.leaf("b") : Tensor();
      const Tensor y = ops::conv2d(x, w, b, ops::Conv2dOptions::square(q[0], q[1], q[2], q[3]));
      g.check(y, "y");
      y.backward(g.input("dy"));
      g.check(x.grad(), "dx");
      g.check(w.grad(), "dw");
      if (has_bias) g.check(b.grad(), "db");
    }
}

TEST_CASE("batch_norm matches PyTorch in train mode (with running statistics) and eval mode") {
  for (DType dt : kDtypes)
    for (const char* name : {"batchnorm_train", "batchnorm_eval"}) {
      const GoldenCase g(name, dt);
      const bool training = std::string(name) == "batchnorm_train";
      Tensor x = g.leaf("x"), gamma = g.leaf("gamma"), beta = g.leaf("beta");
      Tensor rm = g.input("running_mean"), rv = g.input("running_var");
      ops::BatchNormOptions opt;
      opt.training = training;
      opt.momentum = 0.1;
      const Tensor y = ops::batch_norm(x, gamma, beta, rm, rv, opt);
      g.check(y, "y");
      g.check(rm, "running_mean_after");
      g.check(rv, "running_var_after");
      y.backward(g.input("dy"));
      g.check(x.grad(), "dx");
      g.check(gamma.grad(), "dgamma");
      g.check(beta.grad(), "dbeta");
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
  for (DType dt : kDtypes)
    for (const auto& c : cases) {
      const GoldenCase g(c.name, dt);
      Tensor x = g.leaf("x");
      const Tensor y = c.fn(x);
      g.check(y, "y");
      y.backward(g.input("dy"));
      g.check(x.grad(), "dx");
    }
}

TEST_CASE("softmax_nll_loss matches PyTorch's nll_loss(log_softmax, ignore_index=-1)") {
  for (DType dt : kDtypes) {
    const GoldenCase g("softmax_nll", dt);
    Tensor logits = g.leaf("logits");
    const Tensor loss = ops::softmax_nll_loss(logits, g.raw("labels"));
    g.check(loss, "loss");
    loss.backward();
    g.check(logits.grad(), "dlogits");
  }
}
