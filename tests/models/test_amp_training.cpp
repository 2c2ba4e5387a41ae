// Mixed-precision training end to end on the toy task with a BatchNorm net: O1 and O2 (f16, bf16)
// track O0, and batch 1 (the upstream users' overflow case) trains without diverging.
#include <doctest/doctest.h>

#include <cmath>

#include "core/amp_step.h"
#include "core/autograd.h"
#include "layers/amp_model.h"
#include "layers/autocast.h"
#include "layers/batchnorm.h"
#include "layers/conv2d.h"
#include "layers/init.h"
#include "models/toy_net.h"
#include "tests/common/compare.h"

using namespace seg;

namespace {
std::shared_ptr<Sequential> bn_net(uint64_t seed) {
  auto c1 = std::make_shared<Conv2d>(3, 16, 3, 1, 1);
  auto c2 = std::make_shared<Conv2d>(16, 16, 3, 1, 2, 2);
  auto c3 = std::make_shared<Conv2d>(16, 3, 1, 1, 0, 1, 1, true);
  PhiloxStream rng(seed, RngPurpose::init);
  for (Conv2d* c : {c1.get(), c2.get(), c3.get()}) init::kaiming_normal_(c->weight, c->fan_in(), rng);
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<UnaryModule>>{
      c1, std::make_shared<BatchNorm2d>(16, 0.1), std::make_shared<ReLU>(), c2, std::make_shared<BatchNorm2d>(16, 0.1),
      std::make_shared<ReLU>(), c3});
}

// Trains `steps` steps at an AMP level; returns the loss of every step.
std::vector<double> train(const std::string& level, const std::string& dtype, int steps, int64_t batch,
                          int* skipped = nullptr) {
  const AmpConfig cfg = make_amp_config(level, dtype);
  auto net = bn_net(5);
  cast_model_for_amp(*net, cfg);
  SGD sgd({ParamGroup{"all", net->parameters(), 1e-4}}, 0.02, 0.9, cfg.master_weights());
  LossScaler scaler(cfg.scaler);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    const ToyBatch b = make_toy_batch(11, step, batch, 16, 16);
    sgd.zero_grad();
    Tensor loss;
    {
      Autocast ac(cfg);
      loss = ops::softmax_nll_loss(net->forward(b.images.to(amp_input_dtype(cfg))), b.labels);
    }
    scaled_backward(loss, scaler);
    const StepOutcome out = unscale_and_step(scaler, {&sgd});
    if (!out.stepped && skipped) ++*skipped;
    losses.push_back(loss.item());
  }
  return losses;
}

double mean_last(const std::vector<double>& v, size_t n) {
  double s = 0;
  for (size_t i = v.size() - n; i < v.size(); ++i) s += v[i];
  return s / static_cast<double>(n);
}
}  // namespace

TEST_CASE("50 steps: O1 and O2 losses track O0 (f16 and bf16)") {
  const auto ref = train("O0", "f16", 50, 4);
  CHECK(mean_last(ref, 10) < 0.5 * ref[0]);  // O0 itself learns
  for (auto [level, dtype] : std::vector<std::pair<std::string, std::string>>{
           {"O1", "f16"}, {"O2", "f16"}, {"O1", "bf16"}, {"O2", "bf16"}}) {
    CAPTURE(level);
    CAPTURE(dtype);
    const auto l = train(level, dtype, 50, 4);
    for (double v : l) REQUIRE(std::isfinite(v));
    // Band: the first loss within 2% (same weights, rounding only), the mean of the last 10 steps
    // within 15% of O0's (training noise from rounding compounds over 50 steps).
    SEG_CHECK_CLOSE(l[0], ref[0], seg::test::Tolerance{0, 0.02});
    SEG_CHECK_CLOSE(mean_last(l, 10), mean_last(ref, 10), seg::test::Tolerance{0, 0.15});
  }
}

TEST_CASE("batch 1 in f16 (the upstream --apex overflow case) trains without diverging") {
  int skipped = 0;
  const auto l = train("O2", "f16", 60, 1, &skipped);
  for (double v : l) REQUIRE(std::isfinite(v));
  CHECK(mean_last(l, 10) < 0.7 * l[0]);
  MESSAGE("O2 f16 batch 1: loss ", l[0], " -> ", mean_last(l, 10), ", skipped steps: ", skipped);
}
