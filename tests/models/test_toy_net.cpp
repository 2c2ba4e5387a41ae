// Foundation II's end-to-end proof: a 3-layer conv net learns the toy segmentation task on the CPU.
#include <doctest/doctest.h>

#include "models/toy_net.h"

using namespace seg;

TEST_CASE("the toy net learns: loss falls at least tenfold in 300 steps") {
  ToyTrainOptions opt;
  std::vector<double> losses;
  const ToyTrainResult r = train_toy_net(opt, [&](int64_t, double l) { losses.push_back(l); });
  MESSAGE("toy net: loss ", r.first_loss, " -> ", r.last_loss, ", pixel accuracy ", r.pixel_accuracy);
  REQUIRE(losses.size() == 300);
  CHECK(r.first_loss > 10 * r.last_loss);
  CHECK(r.pixel_accuracy > 0.95);
}

TEST_CASE("training is bit-identical for the same seed and thread count") {
  ToyTrainOptions opt;
  opt.steps = 20;
  const ToyTrainResult a = train_toy_net(opt), b = train_toy_net(opt);
  CHECK(a.last_loss == b.last_loss);
  opt.seed = 305;
  CHECK(train_toy_net(opt).last_loss != a.last_loss);
}
