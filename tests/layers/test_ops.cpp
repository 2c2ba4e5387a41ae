// Every op of layers/ops.h: fast kernel against the naive reference, gradients by finite
// differences in double, argument errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/autograd.h"
#include "core/gradcheck.h"
#include "core/rng.h"
#include "kernels/cpu/conv2d.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/softmax_nll.h"
#include "layers/ops.h"
#include "tests/common/compare_tensor.h"

using namespace seg;
using seg::test::Tolerance;

namespace {

Tensor randn(const Shape& shape, DType dt, uint64_t seed, double scale = 1.0) {
  PhiloxStream rng(seed, RngPurpose::test);
  Tensor t = Tensor::empty(shape, DType::f64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = scale * rng.normal();
  return t.to(dt);
}

Tensor random_labels(const Shape& shape, int classes, uint64_t seed, double ignore_share = 0.2) {
  PhiloxStream rng(seed, RngPurpose::test);
  Tensor t = Tensor::empty(shape, DType::i32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<int32_t>()[i] = rng.uniform() < ignore_share ? -1 : static_cast<int32_t>(rng.below(classes));
  return t;
}

struct ConvCase {
  int64_t N, H, W, C, O, K, stride, pad, dil, groups;
  bool bias;
};

// Odd sizes, batch 1, strides, dilations, groups, depthwise: the shapes upstream uses and awkward ones.
const std::vector<ConvCase> kConvCases = {
    {1, 5, 7, 3, 4, 3, 1, 1, 1, 1, true},   {2, 6, 5, 4, 6, 3, 2, 1, 1, 1, false},
    {1, 9, 8, 4, 4, 3, 1, 2, 2, 1, false},  {2, 7, 7, 6, 6, 3, 1, 4, 4, 6, false},  // depthwise d4
    {1, 8, 9, 8, 8, 3, 2, 1, 1, 8, false},  {2, 5, 5, 6, 9, 1, 1, 0, 1, 1, true},   // 1x1
    {1, 6, 6, 4, 6, 3, 1, 1, 1, 2, true},   {1, 7, 5, 5, 3, 1, 2, 0, 1, 1, false},  // grouped, 1x1 s2
    {3, 4, 6, 2, 5, 5, 1, 2, 1, 1, true},
};

}  // namespace

TEST_CASE("conv2d direct kernel equals the naive reference, forward and backward (f32 and f64)") {
  for (const ConvCase& c : kConvCases) {
    cpu::ConvShape s;
    s.N = c.N, s.H = c.H, s.W = c.W, s.C = c.C, s.O = c.O, s.KH = c.K, s.KW = c.K;
    s.stride_h = s.stride_w = c.stride, s.pad_h = s.pad_w = c.pad, s.dil_h = s.dil_w = c.dil, s.groups = c.groups;
    CAPTURE(c.H);
    CAPTURE(c.groups);
    CAPTURE(c.dil);
    const Tensor x = randn({s.N, s.H, s.W, s.C}, DType::f64, 1), w = randn({s.O, s.KH, s.KW, s.Cg()}, DType::f64, 2);
    const Tensor b = randn({s.O}, DType::f64, 3), dy = randn({s.N, s.Ho(), s.Wo(), s.O}, DType::f64, 4);
    Tensor y_ref = Tensor::empty(dy.shape(), DType::f64), y = Tensor::empty(dy.shape(), DType::f64);
    cpu::conv2d_forward_ref(s, x.data<double>(), w.data<double>(), b.data<double>(), y_ref.data<double>());
    cpu::conv2d_forward_direct(s, x.data<double>(), w.data<double>(), b.data<double>(), y.data<double>());
    SEG_CHECK_CLOSE(y, y_ref, Tolerance{1e-12, 0});
    Tensor dx_ref = Tensor::empty(x.shape(), DType::f64), dw_ref = Tensor::empty(w.shape(), DType::f64);
    Tensor db_ref = Tensor::empty(b.shape(), DType::f64);
    cpu::conv2d_backward_ref(s, x.data<double>(), w.data<double>(), dy.data<double>(), dx_ref.data<double>(),
                             dw_ref.data<double>(), db_ref.data<double>());
    Tensor dx = Tensor::empty(x.shape(), DType::f64), dw = Tensor::empty(w.shape(), DType::f64);
    Tensor db = Tensor::empty(b.shape(), DType::f64);
    cpu::conv2d_backward_data_direct(s, w.data<double>(), dy.data<double>(), dx.data<double>());
    cpu::conv2d_backward_weight_direct(s, x.data<double>(), dy.data<double>(), dw.data<double>(), db.data<double>());
    SEG_CHECK_CLOSE(dx, dx_ref, Tolerance{1e-12, 0});
    SEG_CHECK_CLOSE(dw, dw_ref, Tolerance{1e-12, 0});
    SEG_CHECK_CLOSE(db, db_ref, Tolerance{1e-12, 0});
    // f32 through the op: within float rounding of the f64 result.
    const Tensor y32 = ops::conv2d(x.to(DType::f32), w.to(DType::f32), b.to(DType::f32),
                                   ops::Conv2dOptions::square(c.stride, c.pad, c.dil, c.groups));
    SEG_CHECK_CLOSE(y32, y_ref, Tolerance{1e-4, 0});
  }
}

TEST_CASE("conv2d gradients match finite differences") {
  for (const ConvCase& c : kConvCases) {
    CAPTURE(c.H);
    CAPTURE(c.groups);
    const ops::Conv2dOptions o = ops::Conv2dOptions::square(c.stride, c.pad, c.dil, c.groups);
    const Tensor x = randn({c.N, c.H, c.W, c.C}, DType::f64, 5);
    const Tensor w = randn({c.O, c.K, c.K, c.C / c.groups}, DType::f64, 6);
    const Tensor b = c.bias ? randn({c.O}, DType::f64, 7) : Tensor();
    GradCheckOptions opt;
    opt.atol = 1e-6;
    opt.max_checks_per_input = 40;
    const GradCheckResult r = gradcheck(
        [&](const std::vector<Tensor>& in) { return ops::conv2d(in[0], in[1], c.bias ? in[2] : Tensor(), o); },
        c.bias ? std::vector<Tensor>{x, w, b} : std::vector<Tensor>{x, w}, opt);
    CHECK_MESSAGE(r.ok, r.report);
    CHECK(r.checked > 0);
  }
}

TEST_CASE("conv2d argument errors name the problem") {
  const Tensor x = randn({1, 4, 4, 3}, DType::f32, 1);
  CHECK_THROWS_WITH_AS(ops::conv2d(x, randn({2, 3, 3, 4}, DType::f32, 2), Tensor(), {}),
                       doctest::Contains("expects 4 input channels"), Error);
  CHECK_THROWS_WITH_AS(ops::conv2d(x, randn({2, 7, 7, 3}, DType::f32, 2), Tensor(), {}),
                       doctest::Contains("smaller than the kernel"), Error);
  CHECK_THROWS_WITH_AS(ops::conv2d(x.to(DType::i32), randn({2, 1, 1, 3}, DType::f32, 2).to(DType::i32), Tensor(), {}),
                       doctest::Contains("not implemented for dtype i32"), Error);
}

TEST_CASE("elementwise ops: values and gradients") {
  const Tensor a = randn({2, 3, 4}, DType::f64, 11), b = randn({2, 3, 4}, DType::f64, 12);
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  const auto sum = ops::add(a, b).to_vector<double>(), prod = ops::mul(a, b).to_vector<double>();
  const auto sc = ops::scale(a, -2.5).to_vector<double>(), r = ops::relu(a).to_vector<double>();
  const auto r6 = ops::relu6(ops::scale(a, 8.0)).to_vector<double>();
  std::vector<double> sum_want, prod_want, sc_want, r_want, r6_want;
  for (size_t i = 0; i < va.size(); ++i) {
    sum_want.push_back(va[i] + vb[i]);
    prod_want.push_back(va[i] * vb[i]);
    sc_want.push_back(-2.5 * va[i]);
    r_want.push_back(std::max(va[i], 0.0));
    r6_want.push_back(std::min(std::max(8.0 * va[i], 0.0), 6.0));
  }
  // One rounding each, the same as here: exact.
  SEG_CHECK_CLOSE(sum, sum_want, Tolerance{});
  SEG_CHECK_CLOSE(prod, prod_want, Tolerance{});
  SEG_CHECK_CLOSE(sc, sc_want, Tolerance{});
  SEG_CHECK_CLOSE(r, r_want, Tolerance{});
  SEG_CHECK_CLOSE(r6, r6_want, Tolerance{});
  using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
  const std::vector<std::pair<const char*, Fn>> fns = {
      {"add", [](const std::vector<Tensor>& in) { return ops::add(in[0], in[1]); }},
      {"mul", [](const std::vector<Tensor>& in) { return ops::mul(in[0], in[1]); }},
      {"mul self", [](const std::vector<Tensor>& in) { return ops::mul(in[0], in[0]); }},
      {"scale", [](const std::vector<Tensor>& in) { return ops::scale(in[0], 0.3); }},
      {"relu", [](const std::vector<Tensor>& in) { return ops::relu(in[0]); }},
      {"relu6", [](const std::vector<Tensor>& in) { return ops::relu6(ops::scale(in[0], 5.0)); }},
      {"sum", [](const std::vector<Tensor>& in) { return ops::sum(ops::mul(in[0], in[1])); }},
      {"mean", [](const std::vector<Tensor>& in) { return ops::mean(in[0]); }},
  };
  for (const auto& [name, fn] : fns) {
    CAPTURE(name);
    GradCheckOptions opt;
    opt.skip_kinks = true;  // relu at 0, relu6 at 0 and 6
    const GradCheckResult res = gradcheck(fn, {a, b}, opt);
    CHECK_MESSAGE(res.ok, res.report);
    CHECK(res.checked >= 24);
  }
}

TEST_CASE("elementwise ops store f16 and bf16 and compute in f32") {
  for (DType dt : {DType::f16, DType::bf16}) {
    const Tensor a = randn({100}, DType::f32, 1).to(dt), b = randn({100}, DType::f32, 2).to(dt);
    const Tensor s = ops::add(a, b);
    CHECK(s.dtype() == dt);
    const auto va = a.to(DType::f32).to_vector<float>(), vb = b.to(DType::f32).to_vector<float>();
    const auto vs = s.to(DType::f32).to_vector<float>();
    std::vector<float> want;
    for (size_t i = 0; i < va.size(); ++i) {
      const float exact = va[i] + vb[i];
      want.push_back(dt == DType::f16 ? static_cast<float>(f16(exact)) : static_cast<float>(bf16(exact)));
    }
    SEG_CHECK_CLOSE(vs, want, Tolerance{});  // one rounding of the f32 result
  }
}

TEST_CASE("softmax_nll_loss: value against the reference, ignore index, gradient") {
  const Tensor logits = randn({2, 3, 5, 7}, DType::f64, 21, 3.0);
  const Tensor labels = random_labels({2, 3, 5}, 7, 22);
  const Tensor loss = ops::softmax_nll_loss(logits, labels);
  CHECK(loss.shape() == Shape{});
  const cpu::NllResult ref =
      cpu::softmax_nll_forward_ref(logits.data<double>(), labels.data<int32_t>(), 30, 7);
  REQUIRE(ref.valid > 0);
  CHECK(ref.valid < 30);  // some pixels are ignored
  SEG_CHECK_CLOSE(loss.item(), ref.loss_sum / ref.valid, Tolerance{0, 1e-12});
  const GradCheckResult r = gradcheck(
      [&](const std::vector<Tensor>& in) { return ops::softmax_nll_loss(in[0], in[1]); }, {logits, labels});
  CHECK_MESSAGE(r.ok, r.report);
  // f32 logits give the f32 loss within rounding.
  SEG_CHECK_CLOSE(ops::softmax_nll_loss(logits.to(DType::f32), labels).item(), loss.item(), Tolerance{0, 1e-5});
}

TEST_CASE("softmax_nll_loss: every pixel ignored gives 0 and a zero gradient; bad labels are data errors") {
  Tensor logits = randn({1, 2, 2, 3}, DType::f64, 1);
  logits.set_requires_grad(true);
  const Tensor none = Tensor::full({1, 2, 2}, -1, DType::i32);
  const Tensor loss = ops::softmax_nll_loss(logits, none);
  SEG_CHECK_CLOSE(loss.item(), 0.0, Tolerance{});
  loss.backward();
  SEG_CHECK_CLOSE(logits.grad(), Tensor::zeros(logits.shape(), DType::f64), Tolerance{});
  Tensor bad = Tensor::zeros({1, 2, 2}, DType::i32);
  bad.data<int32_t>()[3] = 3;
  try {
    ops::softmax_nll_loss(logits, bad);
    FAIL("label 3 with 3 classes must be refused");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::data);
    CHECK(std::string(e.what()).find("label 3 at pixel 3") != std::string::npos);
  }
}

TEST_CASE("relu/relu6 backward select like PyTorch: no gradient where x <= 0 (or >= 6), whatever dy is") {
  // PyTorch's threshold_backward and hardtanh_backward are selects, not products, so an inf or
  // NaN upstream gradient does not leak through a dead unit, and a NaN input passes no gradient.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-1.0f, 0.0f, 2.0f, nan, 7.0f, 3.0f, 6.0f, -0.5f, 1.0f};
  const std::vector<float> dy = {inf, nan, 5.0f, 4.0f, 1.0f, 2.0f, 3.0f, -inf, -1.5f};
  const std::vector<float> want_relu = {0, 0, 5, 0, 1, 2, 3, 0, -1.5f}, want_relu6 = {0, 0, 5, 0, 0, 2, 0, 0, -1.5f};
  for (bool six : {false, true}) {
    CAPTURE(six);
    const auto& want = six ? want_relu6 : want_relu;
    std::vector<float> dx(x.size());
    cpu::relu_backward(x.data(), dy.data(), dx.data(), static_cast<int64_t>(x.size()), six);
    SEG_CHECK_CLOSE(dx, want, Tolerance{});
    std::vector<f16> xh, dyh, dxh(x.size());  // the 16-bit path widens tiles and runs the same select
    for (size_t i = 0; i < x.size(); ++i) xh.push_back(f16(x[i])), dyh.push_back(f16(dy[i]));
    cpu::relu_backward(xh.data(), dyh.data(), dxh.data(), static_cast<int64_t>(x.size()), six);
    SEG_CHECK_CLOSE(dxh, want, Tolerance{});
  }
}
