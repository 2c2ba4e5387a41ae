// The op observer (core/op_observer.h): sees every op in order, with its tensors and attributes, in
// inference (no gradient recorded) as in training; costs nothing when none is installed.
#include <doctest/doctest.h>

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
  const Tensor x = Tensor::full({1, 5, 5, 2}, 0.5);
  const Tensor w = Tensor::full({3, 3, 3, 2}, 0.1);
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
