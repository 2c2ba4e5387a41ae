// The op observer (core/op_observer.h): sees every op in order, with its tensors and attributes, in
// inference (no gradient recorded) as in training; costs nothing when none is installed.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/op_observer.h"
#include "layers/ops.h"

using namespace seg;

namespace {
struct Recorder final : OpObserver {
  struct Seen {
    std::string op;
    std::vector<Tensor> inputs, outputs;
    nlohmann::json attrs;
  };
  std::vector<Seen> seen;
  void on_forward(const OpEvent& e) override { seen.push_back({e.op, e.inputs, e.outputs, e.attrs}); }
};
}  // namespace

TEST_CASE("op observer: ops in order, tensors by identity, attributes from the op") {
  const Tensor x = Tensor::full({1, 5, 5, 2}, 0.5, DType::f32, Device::cpu());
  const Tensor w = Tensor::full({3, 3, 3, 2}, 0.1, DType::f32, Device::cpu());
  Recorder rec;
  Tensor y, z;
  {
    NoGradGuard no_grad;  // inference: nothing is recorded for autograd, the observer still sees it all
    ScopedOpObserver observe(rec);
    y = ops::conv2d(x, w, Tensor(), ops::Conv2dOptions::square(2, 1, 1, 1));
    z = ops::relu(y);
  }
  REQUIRE(rec.seen.size() == 2);
  CHECK(rec.seen[0].op == "conv2d");
  CHECK(rec.seen[0].inputs[0].same(x));
  CHECK(rec.seen[0].inputs[1].same(w));
  CHECK_FALSE(rec.seen[0].inputs[2].defined());
  CHECK(rec.seen[0].outputs[0].same(y));
  CHECK(rec.seen[0].attrs.at("stride") == 2);
  CHECK(rec.seen[0].attrs.at("pad") == 1);
  CHECK(rec.seen[1].op == "relu");
  CHECK(rec.seen[1].inputs[0].same(y));
  CHECK(rec.seen[1].outputs[0].same(z));
  CHECK_FALSE(z.grad_fn());
  // Uninstalled: nothing more is seen.
  ops::relu(z);
  CHECK(rec.seen.size() == 2);
  CHECK_FALSE(op_observers_installed());
}

// The trainer holds its observers in std::optional and resets them together. Reset in the order
// they were made, the outer one ends first; before the fix the inner one then restored the ended
// one as current, and the next guard made in the same storage became its own outer: every op
// looped forever (train --detect-anomaly --amp-stats hung in its second step).
TEST_CASE("op observer: guards may end in any order, and the next ones see each op once") {
  const Tensor x = Tensor::full({4}, -1.0, DType::f32, Device::cpu());
  Recorder a, b;
  std::optional<ScopedOpObserver> outer, inner;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    a.seen.clear();
    b.seen.clear();
    outer.emplace(a);
    inner.emplace(b);
    ops::relu(x);
    outer.reset();  // the outer one first
    ops::relu(x);   // still installed: the inner one
    inner.reset();
    ops::relu(x);   // none
    CHECK(a.seen.size() == 1);
    CHECK(b.seen.size() == 2);
    CHECK_FALSE(op_observers_installed());
  }
  // Three guards, the middle one ends first: the innermost then reaches the outermost directly.
  Recorder c;
  a.seen.clear();
  b.seen.clear();
  {
    ScopedOpObserver g1(a);
    std::optional<ScopedOpObserver> g2(std::in_place, b);
    ScopedOpObserver g3(c);
    g2.reset();
    ops::relu(x);
    REQUIRE(g3.outer() == &g1);
  }
  CHECK(a.seen.size() == 1);
  CHECK(b.seen.empty());
  CHECK(c.seen.size() == 1);
  CHECK_FALSE(op_observers_installed());
}
