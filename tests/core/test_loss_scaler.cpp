#include <doctest/doctest.h>

#include <cmath>

#include "core/amp_policy.h"
#include "core/amp_step.h"
#include "core/autograd.h"
#include "core/loss_scaler.h"
#include "core/optim.h"
#include "tests/common/compare_tensor.h"

using namespace seg;

TEST_CASE("dynamic loss scaler: Apex's schedule") {
  LossScalerOptions o;
  o.enabled = true;
  o.growth_interval = 3;
  LossScaler s(o);
  CHECK(s.scale() == 65536.0);
  CHECK(s.update(true) == "Gradient overflow. Skipping step, loss scale reduced to 32768");
  CHECK(s.scale() == 32768.0);
  CHECK(s.update(false).empty());
  CHECK(s.update(false).empty());
  CHECK(s.scale() == 32768.0);
  CHECK(s.update(false).empty());  // third clean step: grow
  CHECK(s.scale() == 65536.0);
  CHECK(s.clean_steps() == 0);
  // An overflow resets the clean-step counter.
  s.update(false);
  s.update(false);
  s.update(true);
  CHECK(s.scale() == 32768.0);
  s.update(false);
  s.update(false);
  CHECK(s.scale() == 32768.0);
  CHECK(s.skipped_steps() == 2);
  // Growth is capped at 2^24.
  LossScalerOptions big = o;
  big.init_scale = 16777216.0;
  LossScaler capped(big);
  for (int i = 0; i < 10; ++i) capped.update(false);
  CHECK(capped.scale() == 16777216.0);
}

TEST_CASE("static and disabled scalers; state round trip") {
  LossScalerOptions o;
  o.enabled = true;
  o.dynamic = false;
  o.init_scale = 128;
  LossScaler s(o);
  s.update(true);
  for (int i = 0; i < 5000; ++i) s.update(false);
  CHECK(s.scale() == 128.0);
  LossScaler off;
  CHECK(off.scale() == 1.0);
  LossScalerOptions d;
  d.enabled = true;
  LossScaler a(d), b(d);
  a.update(true);
  a.update(false);
  b.load_state(a.state());
  CHECK(b.scale() == a.scale());
  CHECK(b.clean_steps() == a.clean_steps());
  CHECK(b.skipped_steps() == 1);
}

TEST_CASE("amp config: levels, dtypes, defaults and the policy table") {
  AmpConfig o1 = make_amp_config("O1");
  CHECK(o1.scaler.enabled);
  CHECK(o1.scaler.dynamic);
  CHECK(o1.precision(OpClass::conv) == Precision::half);
  CHECK(o1.precision(OpClass::softmax) == Precision::fp32);
  CHECK(o1.precision(OpClass::loss) == Precision::fp32);
  CHECK(o1.precision(OpClass::concat_add) == Precision::widest);
  AmpConfig o2b = make_amp_config("o2", "bf16");
  CHECK(o2b.half_dtype == DType::bf16);
  CHECK_FALSE(o2b.scaler.enabled);  // bf16: no scaling unless asked
  CHECK(o2b.master_weights());
  CHECK(make_amp_config("O2", "bf16", "dynamic").scaler.enabled);
  AmpConfig o3 = make_amp_config("O3");
  CHECK_FALSE(o3.scaler.dynamic);
  CHECK(o3.scaler.init_scale == 1.0);
  CHECK_FALSE(o3.batchnorm_fp32());
  CHECK(make_amp_config("O3", "f16", "512").scaler.init_scale == 512.0);
  CHECK_FALSE(make_amp_config("O0").scaler.enabled);
  CHECK_THROWS_WITH_AS(make_amp_config("O4"), doctest::Contains("--amp"), Error);
  CHECK_THROWS_AS(make_amp_config("O1", "f8"), Error);
  CHECK_THROWS_AS(make_amp_config("O1", "f16", "-3"), Error);
  const std::string table = o1.policy_table();
  CHECK(table.find("conv / GEMM") != std::string::npos);
  CHECK(table.find("dynamic, start 65536") != std::string::npos);
  CHECK(amp_policy_overview().find("O3") != std::string::npos);
}

TEST_CASE("the AMP tables say that O0's f32 convolutions and GEMMs run on TF32 tensor cores on cuda unless --no-tf32") {
  // O0 is the only level whose conv / GEMM class computes in f32; the others run it in half, where
  // TF32 does not apply, and must not mention it.
  const std::string o0 = make_amp_config("O0").policy_table();
  const size_t conv = o0.find("conv / GEMM");
  REQUIRE(conv != std::string::npos);
  const std::string conv_line = o0.substr(conv, o0.find('\n', conv) - conv);
  CHECK(conv_line.find("f32 (on cuda: TF32 tensor cores") != std::string::npos);
  CHECK(conv_line.find("--no-tf32 for strict f32") != std::string::npos);
  for (const char* level : {"O1", "O2", "O3"}) CHECK(make_amp_config(level).policy_table().find("TF32") == std::string::npos);
  // With --no-tf32 the run's table says strict f32 instead.
  const std::string strict = make_amp_config("O0").policy_table(true);
  const size_t strict_conv = strict.find("conv / GEMM");
  REQUIRE(strict_conv != std::string::npos);
  const std::string strict_line = strict.substr(strict_conv, strict.find('\n', strict_conv) - strict_conv);
  CHECK(strict_line.find("strict f32 on cuda too") != std::string::npos);
  CHECK(strict_line.find("TF32 tensor cores,") == std::string::npos);

  const std::string overview = amp_policy_overview();
  const size_t row = overview.find("conv / GEMM");
  REQUIRE(row != std::string::npos);
  const std::string o0_cell = "conv / GEMM            f32* ";  // the O0 column's cell, marked
  CHECK(overview.compare(row, o0_cell.size(), o0_cell) == 0);
  CHECK(overview.find("\n* f32 conv / GEMM (on cuda: TF32 tensor cores") != std::string::npos);
  CHECK(overview.find("--no-tf32") != std::string::npos);
}

TEST_CASE("an overflowing step changes no parameter and halves the scale; a clean one steps") {
  Tensor w = Tensor::full({4}, 1.0, DType::f32, Device::cpu());
  w.set_requires_grad(true);
  SGD sgd({ParamGroup{"all", {w}, 0.0}}, 0.1, 0.9);
  LossScalerOptions o;
  o.enabled = true;
  LossScaler scaler(o);
  // An injected inf gradient.
  w.set_grad(Tensor::from_vector<float>({4}, {1.0f, INFINITY, 0.5f, 0.0f}));
  StepOutcome r = unscale_and_step(scaler, {&sgd});
  CHECK_FALSE(r.stepped);
  CHECK(r.scale_used == 65536.0);
  CHECK(scaler.scale() == 32768.0);
  CHECK(r.message == "Gradient overflow. Skipping step, loss scale reduced to 32768");
  SEG_CHECK_CLOSE(w, Tensor::full({4}, 1.0, DType::f32, Device::cpu()), seg::test::Tolerance{});  // untouched
  CHECK_FALSE(sgd.state()[0].momentum.defined());  // no momentum update either
  // A clean, scaled gradient: the update uses the unscaled value.
  w.set_grad(Tensor::full({4}, 2.0 * scaler.scale(), DType::f32, Device::cpu()));
  r = unscale_and_step(scaler, {&sgd});
  CHECK(r.stepped);
  SEG_CHECK_CLOSE(w, Tensor::full({4}, 1.0 - 0.1 * 2.0, DType::f32, Device::cpu()), seg::test::Tolerance{0, 1e-7});  // f32 arithmetic
}

TEST_CASE("master weights keep updates that half precision would lose") {
  // w = 1 in f16 has a spacing of 2^-10; an update of 1e-4 per step is lost in pure half but
  // accumulates in the fp32 master copy and reaches the half weight after enough steps.
  Tensor pure = Tensor::full({1}, 1.0, DType::f16, Device::cpu()), mastered = Tensor::full({1}, 1.0, DType::f16, Device::cpu());
  pure.set_requires_grad(true);
  mastered.set_requires_grad(true);
  SGD sgd_pure({ParamGroup{"p", {pure}, 0.0}}, 1e-4, 0.0, false);
  SGD sgd_master({ParamGroup{"m", {mastered}, 0.0}}, 1e-4, 0.0, true);
  for (int i = 0; i < 100; ++i) {
    pure.set_grad(Tensor::full({1}, 1.0, DType::f16, Device::cpu()));
    mastered.set_grad(Tensor::full({1}, 1.0, DType::f16, Device::cpu()));
    sgd_pure.step();
    sgd_master.step();
  }
  CHECK(pure.item() == 1.0);  // every update rounded away
  // 100 f32 additions of 1e-4 to a value near 1: each rounds by up to 2^-25, 3e-6 at most in all.
  SEG_CHECK_CLOSE(sgd_master.state()[0].master.item(), 1.0 - 100 * 1e-4, seg::test::Tolerance{0, 1e-5});
  // The half copy follows the master: 0.99 rounded to f16 (spacing 2^-11 below 1).
  SEG_CHECK_CLOSE(mastered.item(), 0.99, seg::test::Tolerance{std::ldexp(1.0, -11), 0});
}
