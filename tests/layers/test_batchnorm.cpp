#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

#include "core/autograd.h"
#include "core/gradcheck.h"
#include "kernels/cpu/batchnorm.h"
#include "layers/batchnorm.h"
#include "layers/conv2d.h"
#include "layers/ops.h"
#include "tests/layers/test_helpers.h"

using namespace seg;
using seg::test::randn;
using seg::test::Tolerance;

TEST_CASE("batch_norm train: output against the reference, running statistics with momentum and unbiased var") {
  const int64_t N = 2, H = 3, W = 5, C = 6, P = N * H * W;
  const Tensor x = randn({N, H, W, C}, DType::f64, 1, 2.0, 0.5);
  const Tensor gamma = randn({C}, DType::f64, 2), beta = randn({C}, DType::f64, 3);
  Tensor rm = randn({C}, DType::f64, 4), rv = randn({C}, DType::f64, 5, 0.1, 1.0);
  const auto rm0 = rm.to_vector<double>(), rv0 = rv.to_vector<double>();
  ops::BatchNormOptions opt;
  opt.momentum = 0.25;
  const Tensor y = ops::batch_norm(x, gamma, beta, rm, rv, opt);
  Tensor y_ref = Tensor::empty(x.shape(), DType::f64, Device::cpu());
  std::vector<double> mean(C), var(C);
  cpu::bn_forward_ref<double, double>(x.data<double>(), P, C, gamma.data<double>(), beta.data<double>(), nullptr,
                                      nullptr, true, 1e-5, y_ref.data<double>(), mean.data(), var.data());
  SEG_CHECK_CLOSE(y, y_ref, Tolerance{1e-10, 0});
  std::vector<double> rm_want(C), rv_want(C);
  for (int64_t c = 0; c < C; ++c) {
    rm_want[c] = 0.75 * rm0[c] + 0.25 * mean[c];
    rv_want[c] = 0.75 * rv0[c] + 0.25 * var[c] * P / (P - 1.0);
  }
  // f64 statistics from a chunked two-pass sum here, a plain loop in the reference.
  SEG_CHECK_CLOSE(rm.to_vector<double>(), rm_want, Tolerance{1e-14, 1e-12});
  SEG_CHECK_CLOSE(rv.to_vector<double>(), rv_want, Tolerance{1e-14, 1e-12});
}

TEST_CASE("batch_norm eval uses the running statistics and leaves them alone") {
  const int64_t C = 4;
  const Tensor x = randn({1, 3, 3, C}, DType::f64, 1);
  const Tensor gamma = randn({C}, DType::f64, 2), beta = randn({C}, DType::f64, 3);
  Tensor rm = randn({C}, DType::f64, 4), rv = randn({C}, DType::f64, 5, 0.1, 1.0);
  const auto rm0 = rm.to_vector<double>();
  ops::BatchNormOptions opt;
  opt.training = false;
  const Tensor y = ops::batch_norm(x, gamma, beta, rm, rv, opt);
  Tensor y_ref = Tensor::empty(x.shape(), DType::f64, Device::cpu());
  cpu::bn_forward_ref<double, double>(x.data<double>(), 9, C, gamma.data<double>(), beta.data<double>(),
                                      rm.data<double>(), rv.data<double>(), false, 1e-5, y_ref.data<double>(), nullptr,
                                      nullptr);
  SEG_CHECK_CLOSE(y, y_ref, Tolerance{1e-12, 0});
  SEG_CHECK_CLOSE(rm.to_vector<double>(), rm0, Tolerance{});  // eval: untouched
}

TEST_CASE("batch_norm gradients (train and eval) match finite differences") {
  const int64_t C = 3;
  const Tensor x = randn({2, 3, 4, C}, DType::f64, 7, 1.5, 0.3);
  const Tensor gamma = randn({C}, DType::f64, 8), beta = randn({C}, DType::f64, 9);
  for (bool training : {true, false}) {
    CAPTURE(training);
    Tensor rm = Tensor::zeros({C}, DType::f64, Device::cpu()), rv = Tensor::full({C}, 2.0, DType::f64, Device::cpu());
    ops::BatchNormOptions opt;
    opt.training = training;
    const GradCheckResult r = gradcheck(
        [&](const std::vector<Tensor>& in) { return ops::batch_norm(in[0], in[1], in[2], rm, rv, opt); },
        {x, gamma, beta});
    CHECK_MESSAGE(r.ok, r.report);
  }
}

TEST_CASE("batch_norm with a reducer: two identical ranks give the single-rank result") {
  // A fake all-reduce that behaves as if a second rank held the same batch: doubling every sum
  // (including the count) must not change the statistics or the gradients.
  struct Doubling : ops::BatchNormReducer {
    int calls = 0, counts = 0;
    void allreduce_sum(Tensor& v) override {
      ++calls;
      double* d = v.data<double>();
      for (int64_t i = 0; i < v.numel(); ++i) d[i] *= 2;
    }
    double sum_count(double count) override {
      ++counts;
      return 2 * count;
    }
  } reducer;
  const int64_t C = 5;
  const Tensor x = randn({2, 2, 3, C}, DType::f64, 1);
  Tensor g1 = randn({C}, DType::f64, 2), b1 = randn({C}, DType::f64, 3);
  Tensor g2 = g1.clone(), b2 = b1.clone();
  Tensor x1 = x.clone(), x2 = x.clone();
  for (Tensor* t : {&g1, &b1, &g2, &b2, &x1, &x2}) t->set_requires_grad(true);
  Tensor rm1 = Tensor::zeros({C}, DType::f64, Device::cpu()), rv1 = Tensor::full({C}, 1.0, DType::f64, Device::cpu());
  Tensor rm2 = rm1.clone(), rv2 = rv1.clone();
  ops::BatchNormOptions opt;
  const Tensor y1 = ops::batch_norm(x1, g1, b1, rm1, rv1, opt);
  opt.reducer = &reducer;
  const Tensor y2 = ops::batch_norm(x2, g2, b2, rm2, rv2, opt);
  SEG_CHECK_CLOSE(y1, y2, Tolerance{1e-12, 0});
  const Tensor dy = randn(y1.shape(), DType::f64, 9);
  y1.backward(dy);
  y2.backward(dy);
  CHECK(reducer.calls == 3);  // forward: global mean, then global squared deviations; backward: sums
  CHECK(reducer.counts == 1);  // the global count, once in forward (backward reuses it)
  SEG_CHECK_CLOSE(x1.grad(), x2.grad(), Tolerance{1e-12, 0});
  SEG_CHECK_CLOSE(g1.grad(), g2.grad(), Tolerance{1e-12, 0});
  // Unbiased variance uses the global count: M = 2P instead of P.
  SEG_CHECK_CLOSE(rm1, rm2, Tolerance{1e-12, 0});
  CHECK(rv1.to_vector<double>()[0] != rv2.to_vector<double>()[0]);
}

TEST_CASE("batch_norm keeps f32 precision when |mean| >> std (no sumsq - mean^2 cancellation)") {
  for (double shift : {6.0, 50.0, 1000.0}) {
    CAPTURE(shift);
    const Tensor x64 = randn({4, 16, 16, 8}, DType::f64, 3, 1.0, shift);
    const Tensor x32 = x64.to(DType::f32);
    Tensor g = Tensor::full({8}, 1.0, DType::f64, Device::cpu()), b = Tensor::zeros({8}, DType::f64, Device::cpu());
    Tensor rm = Tensor::zeros({8}, DType::f64, Device::cpu()), rv = Tensor::full({8}, 1.0, DType::f64, Device::cpu());
    Tensor g32 = g.to(DType::f32), b32 = b.to(DType::f32), rm32 = rm.to(DType::f32), rv32 = rv.to(DType::f32);
    ops::BatchNormOptions opt;
    const Tensor y64 = ops::batch_norm(x32.to(DType::f64), g, b, rm, rv, opt);
    const Tensor y32 = ops::batch_norm(x32, g32, b32, rm32, rv32, opt);
    // The output is ~N(0,1); f32 inputs near `shift` carry shift*2^-24 of rounding already.
    // The bound is what f32 storage of the mean allows (|mean| * 2^-24 plus a little); the former
    // sumsq/M - mean^2 form was 12x over it at shift 50.
    SEG_CHECK_CLOSE(y32, y64, Tolerance{1e-6 + 4e-8 * shift, 0});
  }
}

TEST_CASE("BatchNorm2d module: names, f32 parameters for half activations, batch counter") {
  BatchNorm2d bn(8, 0.1);
  std::vector<std::string> names;
  for (const auto& p : bn.named_parameters()) names.push_back(p.name);
  for (const auto& b : bn.named_buffers()) names.push_back(b.name);
  CHECK(names == std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    const Tensor x = randn({2, 4, 4, 8}, DType::f32, 3, 2.0, 1.0).to(dt);
    const Tensor y = bn.forward(x);
    CHECK(y.dtype() == dt);
    // Normalised output: per-channel mean ~0 and variance ~1 (within the storage precision).
    const auto v = y.to(DType::f32).to_vector<float>();
    double s = 0, s2 = 0;
    for (int64_t p = 0; p < 32; ++p) {
      s += v[p * 8];
      s2 += v[p * 8] * v[p * 8];
    }
    SEG_CHECK_CLOSE(s / 32, 0.0, Tolerance{0.02, 0});
    SEG_CHECK_CLOSE(s2 / 32, 1.0, Tolerance{0.04, 0});  // doctest's Approx(1).epsilon(0.02) was 0.02 * (1 + 1)
  }
  CHECK(bn.num_batches_tracked.item() == 3);
  bn.eval();
  bn.forward(randn({1, 2, 2, 8}, DType::f32, 4));
  CHECK(bn.num_batches_tracked.item() == 3);
}

TEST_CASE("batch_norm with a fused ReLU/ReLU6 is batch_norm then relu/relu6, number for number") {
  // The fused op clamps before rounding to the storage type and masks dy by its own output; the
  // separate ops round first and mask by the BatchNorm's output. Rounding is monotone and 0 and 6
  // are representable in every dtype, so both give the same numbers (up to the sign of a zero), and
  // the backward sums run the same loops: compared exactly.
  const int64_t C = 19;
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16})
    for (BnActivation act : {BnActivation::relu, BnActivation::relu6})
      for (bool training : {true, false}) {
        CAPTURE(dtype_name(dt));
        CAPTURE(static_cast<int>(act));
        CAPTURE(training);
        const DType pdt = dt == DType::f64 ? DType::f64 : DType::f32;
        const Tensor x = randn({2, 5, 7, C}, DType::f64, 21, 2.0, 0.5).to(dt);
        // gamma ~ 2.5 and beta ~ 2.5: the outputs cross both 0 and 6
        const Tensor gamma = randn({C}, pdt, 22, 0.5, 2.5), beta = randn({C}, pdt, 23, 1.0, 2.5);
        const Tensor rm0 = randn({C}, pdt, 24, 0.1), rv0 = randn({C}, pdt, 25, 0.1, 1.0);
        const Tensor dy = randn(x.shape(), DType::f64, 26).to(dt);
        Tensor xs[2], gs[2], bs[2], rms[2], rvs[2], ys[2];
        for (int fused = 0; fused < 2; ++fused) {
          xs[fused] = x.clone().set_requires_grad(true);
          gs[fused] = gamma.clone().set_requires_grad(true);
          bs[fused] = beta.clone().set_requires_grad(true);
          rms[fused] = rm0.clone();
          rvs[fused] = rv0.clone();
          ops::BatchNormOptions opt;
          opt.training = training;
          opt.momentum = 0.25;
          if (fused) opt.act = act;
          const Tensor y = ops::batch_norm(xs[fused], gs[fused], bs[fused], rms[fused], rvs[fused], opt);
          ys[fused] = fused ? y : act == BnActivation::relu6 ? ops::relu6(y) : ops::relu(y);
          ys[fused].backward(dy);
        }
        CHECK(ys[1].grad_fn()->name() == (act == BnActivation::relu6 ? "batch_norm_relu6" : "batch_norm_relu"));
        // Both kinks are exercised: zeros, and sixes for ReLU6.
        const auto v = ys[1].to(DType::f64).to_vector<double>();
        CHECK(std::count(v.begin(), v.end(), 0.0) > 20);
        if (act == BnActivation::relu6) CHECK(std::count(v.begin(), v.end(), 6.0) > 20);
        SEG_CHECK_CLOSE(ys[1], ys[0], Tolerance{});
        SEG_CHECK_CLOSE(xs[1].grad(), xs[0].grad(), Tolerance{});
        SEG_CHECK_CLOSE(gs[1].grad(), gs[0].grad(), Tolerance{});
        SEG_CHECK_CLOSE(bs[1].grad(), bs[0].grad(), Tolerance{});
        SEG_CHECK_CLOSE(rms[1], rms[0], Tolerance{});
        SEG_CHECK_CLOSE(rvs[1], rvs[0], Tolerance{});
      }
}

TEST_CASE("batch_norm with a fused ReLU6: gradients match finite differences away from the kinks") {
  const int64_t C = 3;
  const Tensor x = randn({2, 3, 4, C}, DType::f64, 27, 1.5, 0.3);
  const Tensor gamma = randn({C}, DType::f64, 28, 0.5, 2.5), beta = randn({C}, DType::f64, 29, 1.0, 2.5);
  Tensor rm = Tensor::zeros({C}, DType::f64, Device::cpu()), rv = Tensor::full({C}, 2.0, DType::f64, Device::cpu());
  ops::BatchNormOptions opt;
  opt.act = BnActivation::relu6;
  GradCheckOptions gopt;
  gopt.skip_kinks = true;
  const GradCheckResult r = gradcheck(
      [&](const std::vector<Tensor>& in) { return ops::batch_norm(in[0], in[1], in[2], rm, rv, opt); }, {x, gamma, beta},
      gopt);
  CHECK_MESSAGE(r.ok, r.report);
}

TEST_CASE("Sequential runs BatchNorm + ReLU6 as one op under upstream's indices; fusion can be turned off") {
  auto bn = std::make_shared<BatchNorm2d>(6, 0.1);
  Sequential seq(std::vector<std::shared_ptr<UnaryModule>>{bn, std::make_shared<ReLU>(true)});
  std::vector<std::string> names;
  for (const auto& p : seq.named_parameters()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias"});
  const Tensor x = randn({2, 3, 3, 6}, DType::f32, 30, 3.0, 1.0);
  const bool was = bn_activation_fusion();
  set_bn_activation_fusion(true);
  const Tensor fused = seq.forward(x);
  CHECK(fused.grad_fn()->name() == "batch_norm_relu6");
  set_bn_activation_fusion(false);
  const Tensor apart = seq.forward(x);
  CHECK(apart.grad_fn()->name() == "relu6");
  set_bn_activation_fusion(was);
  SEG_CHECK_CLOSE(fused, apart, Tolerance{});
  CHECK(bn->num_batches_tracked.item() == 2);
}
