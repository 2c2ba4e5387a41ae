// A three-layer conv net and a toy segmentation task: the smallest end-to-end proof that tensors,
// autograd, ops and the optimizer work together (Foundation II). The real models live beside it.
//
// Task: [N, H, W, 3] images of noise (std 0.3) with squares of two kinds on them:
//   class 1: a flat square (+1 in channel 0)
//   class 2: a checkerboard square (+-1 in channel 0: mean 0, so a single pixel cannot tell it from
//            noise; the 3x3 neighbourhood can)
//   class 0: background. Labels are i32 [N, H, W]; a one-pixel border is ignore (-1).
// Net: conv3x3(3->16)+ReLU, conv3x3(16->16)+ReLU, conv1x1(16->3) (logits).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "layers/conv2d.h"

namespace seg {

class ToyNet : public UnaryModule {
 public:
  explicit ToyNet(uint64_t seed, int64_t width = 16);
  Tensor forward(const Tensor& x) override;  // [N,H,W,3] -> logits [N,H,W,3]

 private:
  std::shared_ptr<Sequential> body_;
};

struct ToyBatch {
  Tensor images;  // f32 [N, H, W, 3]
  Tensor labels;  // i32 [N, H, W]
};
ToyBatch make_toy_batch(uint64_t seed, int64_t step, int64_t N, int64_t H, int64_t W);

struct ToyTrainOptions {
  uint64_t seed = 304;
  int64_t steps = 300;
  int64_t batch = 8;
  int64_t size = 24;
  double lr = 0.05;
  double momentum = 0.9;
};
struct ToyTrainResult {
  double first_loss = 0;  // mean of the first 10 steps
  double last_loss = 0;   // mean of the last 10 steps
  double pixel_accuracy = 0;  // on a fresh batch after training
};
// Trains ToyNet with SGD; `on_step(step, loss)` is called after every step when set.
ToyTrainResult train_toy_net(const ToyTrainOptions& opt, const std::function<void(int64_t, double)>& on_step = {});

}  // namespace seg
