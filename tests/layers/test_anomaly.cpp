// --detect-anomaly's detector (layers/anomaly.h) on planted faults: it names the op that makes the
// first inf/NaN, forward or backward, with its module; it stops or records as the loss scaling says;
// it says nothing about a clean graph.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "core/autograd.h"
#include "layers/anomaly.h"
#include "layers/autocast.h"
#include "layers/conv2d.h"
#include "layers/ops.h"

using namespace seg;

namespace {
// A module tree with one named conv: "block.conv.weight".
struct Block : Module {
  std::shared_ptr<Conv2d> conv;
  Block() { conv = register_module("conv", std::make_shared<Conv2d>(2, 3, 3, 1, 1)); }
};
struct Net : Module {
  std::shared_ptr<Block> block;
  Net() { block = register_module("block", std::make_shared<Block>()); }
};

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("anomaly: an f16 conv whose output overflows 65504 is named, forward, with its ranges") {
  Net net;
  net.block->conv->weight = Tensor::full({3, 3, 3, 2}, 100.0, DType::f16);  // 18 taps x 100 x 100 = 1.8e5
  const Tensor x = Tensor::full({1, 4, 4, 2}, 100.0, DType::f16);
  AnomalyDetector det(net);
  det.begin_step(1.0, false);
  const std::string report = error_of([&] {
    ScopedOpObserver observe(det);
    net.block->conv->forward(x);
  });
  INFO(report);
  CHECK(report.find("anomaly: forward conv2d (block.conv)") != std::string::npos);
  CHECK(report.find("from finite inputs") != std::string::npos);
  CHECK(report.find("block.conv.weight") != std::string::npos);  // the weight's row names it
  CHECK(report.find("f16") != std::string::npos);
  CHECK(report.find("max 100") != std::string::npos);           // the inputs' range
  CHECK(report.find("inf 48") != std::string::npos);  // every output value: even a corner has 8 taps x 1e4 > 65504
  // The same conv with sane weights: nothing.
  net.block->conv->weight = Tensor::full({3, 3, 3, 2}, 0.01, DType::f16);
  CHECK(error_of([&] {
          ScopedOpObserver observe(det);
          net.block->conv->forward(x);
        }) == "");
}

TEST_CASE("anomaly: an f32 activation that overflows at the next op's f16 storage is named at that cast (O1)") {
  // Under O1 an f32 value above 65504 (BN, add and ReLU run in f32 or the widest dtype) is finite
  // until the next convolution casts its input to f16. The detector names that cast, inside the conv's
  // module, with the f32 input's range: the overflow is reported where the storage dtype changes.
  Net net;
  AmpConfig amp;
  amp.level = AmpLevel::O1;
  const Tensor x = Tensor::full({1, 4, 4, 2}, 1e5, DType::f32);  // finite in f32, inf in f16
  AnomalyDetector det(net);
  det.begin_step(1.0, false);
  const std::string report = error_of([&] {
    ScopedOpObserver observe(det);
    Autocast autocast(amp);
    net.block->conv->forward(x);
  });
  INFO(report);
  CHECK(report.find("anomaly: forward cast") != std::string::npos);
  CHECK(report.find("block.conv") != std::string::npos);
  CHECK(report.find("from finite inputs") != std::string::npos);
  CHECK(report.find("f32") != std::string::npos);
  CHECK(report.find("max 1e+05") != std::string::npos);
  CHECK(report.find("inf 32") != std::string::npos);  // every element of [1,4,4,2]
  // Values within f16's range: nothing.
  const Tensor small = Tensor::full({1, 4, 4, 2}, 100.0, DType::f32);
  CHECK(error_of([&] {
          ScopedOpObserver observe(det);
          Autocast autocast(amp);
          net.block->conv->forward(small);
        }) == "");
}

TEST_CASE("anomaly: a loss that is infinite from finite logits (log of a zero probability) names the loss") {
  Net net;
  AnomalyDetector det(net);
  det.begin_step(1.0, false);
  // The label's logit is so far below the largest that its probability underflows to 0 in f32:
  // -log p = 6e38, beyond f32's range.
  const Tensor logits = Tensor::from_vector<float>({1, 1, 1, 3}, {3e38f, -3e38f, 0.0f});
  const Tensor labels = Tensor::from_vector<int32_t>({1, 1, 1}, {1});
  const std::string report = error_of([&] {
    ScopedOpObserver observe(det);
    ops::softmax_nll_loss(logits, labels);
  });
  INFO(report);
  CHECK(report.find("anomaly: forward softmax_nll_loss") != std::string::npos);
  CHECK(report.find("from finite inputs") != std::string::npos);
}

TEST_CASE("anomaly: a backward overflow is recorded under dynamic scaling and stops without it") {
  Net net;
  Tensor w = Tensor::full({4}, 1.0, DType::f16);
  w.set_requires_grad(true);
  const Tensor x = Tensor::full({4}, 1000.0, DType::f16);
  auto step = [&](bool dynamic) {
    AnomalyDetector det(net);
    det.begin_step(65536.0, dynamic);
    {
      ScopedOpObserver observe(det);
      const Tensor y = ops::mul(x, w);           // forward: 1000, fine in f16
      y.backward(Tensor::full({4}, 65536.0, DType::f16));  // dw = 65536 * 1000 overflows f16
    }
    return det.backward_anomaly();
  };
  const auto recorded = step(true);
  REQUIRE(recorded.has_value());
  CHECK(recorded->direction == "backward");
  CHECK(recorded->op == "mul");
  CHECK(recorded->one_line.find("at loss scale 65536") != std::string::npos);
  CHECK(recorded->one_line.find("input 1") != std::string::npos);  // the gradient of w
  w.zero_grad();
  const std::string report = error_of([&] { step(false); });
  CHECK(report.find("anomaly: backward mul") != std::string::npos);
}

TEST_CASE("anomaly: a clean forward and backward report nothing") {
  Net net;
  net.block->conv->weight = Tensor::full({3, 3, 3, 2}, 0.05);
  net.block->conv->weight.set_requires_grad(true);
  AnomalyDetector det(net);
  det.begin_step(1.0, false);
  {
    ScopedOpObserver observe(det);
    const Tensor y = ops::relu(net.block->conv->forward(Tensor::full({1, 4, 4, 2}, 0.5)));
    ops::sum(y).backward();
  }
  CHECK_FALSE(det.backward_anomaly().has_value());
  CHECK(net.block->conv->weight.grad().defined());
}
