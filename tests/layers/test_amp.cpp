// Mixed-precision mechanics at the layer level: O1 per-op casts, O2/O3 model casting.
#include <doctest/doctest.h>

#include "core/autograd.h"
#include "layers/amp_model.h"
#include "layers/autocast.h"
#include "layers/batchnorm.h"
#include "layers/conv2d.h"
#include "layers/init.h"
#include "tests/layers/test_helpers.h"

using namespace seg;
using seg::test::randn;

namespace {
struct SmallNet {
  std::shared_ptr<Conv2d> c1 = std::make_shared<Conv2d>(3, 8, 3, 1, 1, 1, 1, true);
  std::shared_ptr<BatchNorm2d> bn = std::make_shared<BatchNorm2d>(8, 0.1);
  std::shared_ptr<Conv2d> c2 = std::make_shared<Conv2d>(8, 4, 1, 1, 0, 1, 1, true);
  Sequential seq{{c1, bn, std::make_shared<ReLU>(), c2}};
  SmallNet() {
    PhiloxStream rng(1, RngPurpose::init);
    init::kaiming_normal_(c1->weight, c1->fan_in(), rng);
    init::kaiming_normal_(c2->weight, c2->fan_in(), rng);
  }
};
}  // namespace

TEST_CASE("O1: conv runs in half, the loss in fp32, parameter gradients stay fp32, weights cast once") {
  SmallNet net;
  const AmpConfig cfg = make_amp_config("O1");
  const Tensor x = randn({2, 6, 6, 3}, DType::f32, 1);
  Tensor labels = Tensor::zeros({2, 6, 6}, DType::i32, Device::cpu());
  Tensor logits, loss;
  {
    Autocast ac(cfg);
    REQUIRE(Autocast::active() == &ac);
    logits = net.seq.forward(x);
    // The same weight used twice in one step is cast once.
    ops::conv2d(x, net.c1->weight, net.c1->bias, ops::Conv2dOptions::square(1, 1));
    CHECK(ac.cached_casts() == 4);  // c1.weight, c1.bias, c2.weight, c2.bias
    loss = ops::softmax_nll_loss(logits, labels);
  }
  CHECK(Autocast::active() == nullptr);
  CHECK(logits.dtype() == DType::f16);
  CHECK(loss.dtype() == DType::f32);
  loss.backward();
  for (const auto& p : net.seq.named_parameters()) {
    CAPTURE(p.name);
    CHECK(p.tensor->dtype() == DType::f32);
    REQUIRE(p.tensor->grad().defined());
    CHECK(p.tensor->grad().dtype() == DType::f32);
  }
  // O0 guard: nothing is cast.
  Autocast off(make_amp_config("O0"));
  CHECK(Autocast::active() == nullptr);
  CHECK(net.seq.forward(x).dtype() == DType::f32);
}

TEST_CASE("O1 add and concat promote mixed inputs to the widest dtype") {
  Autocast ac(make_amp_config("O1"));
  const Tensor a = randn({1, 2, 2, 3}, DType::f32, 1), b = randn({1, 2, 2, 3}, DType::f16, 2);
  CHECK(ops::add(a, b).dtype() == DType::f32);
  CHECK(ops::concat_channels({b, a}).dtype() == DType::f32);
  CHECK(ops::softmax(b).dtype() == DType::f32);
}

TEST_CASE("O2 casts the model to half but keeps BatchNorm in fp32; O3 casts everything") {
  {
    SmallNet net;
    CHECK(cast_model_for_amp(net.seq, make_amp_config("O2")) == 4);
    CHECK(net.c1->weight.dtype() == DType::f16);
    CHECK(net.c2->bias.dtype() == DType::f16);
    CHECK(net.bn->weight.dtype() == DType::f32);
    CHECK(net.bn->running_var.dtype() == DType::f32);
    CHECK(net.c1->weight.requires_grad());
    // The registry sees the new tensors (modules register pointers to their fields).
    CHECK(net.seq.named_parameters()[0].tensor->dtype() == DType::f16);
    const Tensor y = net.seq.forward(randn({2, 5, 5, 3}, DType::f16, 3));
    CHECK(y.dtype() == DType::f16);
  }
  {
    SmallNet net;
    cast_model_for_amp(net.seq, make_amp_config("O3", "bf16"));
    CHECK(net.bn->weight.dtype() == DType::bf16);
    CHECK(net.bn->running_mean.dtype() == DType::bf16);
    CHECK(net.bn->num_batches_tracked.dtype() == DType::i64);
    const Tensor y = net.seq.forward(randn({2, 5, 5, 3}, DType::bf16, 3));
    CHECK(y.dtype() == DType::bf16);
    ops::sum(y).backward();
    CHECK(net.bn->weight.grad().dtype() == DType::bf16);
  }
}
