#include "models/toy_net.h"

#include <algorithm>

#include "core/autograd.h"
#include "core/optim.h"
#include "core/rng.h"
#include "layers/init.h"

namespace seg {

ToyNet::ToyNet(uint64_t seed, int64_t width) {
  auto c1 = std::make_shared<Conv2d>(3, width, 3, 1, 1, 1, 1, true);
  auto c2 = std::make_shared<Conv2d>(width, width, 3, 1, 1, 1, 1, true);
  auto c3 = std::make_shared<Conv2d>(width, 3, 1, 1, 0, 1, 1, true);
  PhiloxStream rng(seed, RngPurpose::init);
  for (Conv2d* c : {c1.get(), c2.get(), c3.get()}) init::pytorch_default_conv_(c->weight, &c->bias, c->fan_in(), rng);
  body_ = register_module("body", std::make_shared<Sequential>(std::vector<std::shared_ptr<UnaryModule>>{
                                      c1, std::make_shared<ReLU>(), c2, std::make_shared<ReLU>(), c3}));
}

Tensor ToyNet::forward(const Tensor& x) { return body_->forward(x); }

ToyBatch make_toy_batch(uint64_t seed, int64_t step, int64_t N, int64_t H, int64_t W) {
  PhiloxStream rng(seed, RngPurpose::data_synth, static_cast<uint64_t>(step));
  ToyBatch b{Tensor::empty({N, H, W, 3}, DType::f32, Device::cpu()), Tensor::zeros({N, H, W}, DType::i32, Device::cpu())};
  float* img = b.images.data<float>();
  int32_t* lab = b.labels.data<int32_t>();
  for (int64_t i = 0; i < b.images.numel(); ++i) img[i] = 0.3f * rng.normal();
  for (int64_t n = 0; n < N; ++n) {
    for (int sq = 0; sq < 3; ++sq) {
      const int32_t cls = 1 + static_cast<int32_t>(rng.below(2));
      const int64_t size = 4 + rng.below(static_cast<uint32_t>(std::max<int64_t>(1, H / 3)));
      const int64_t y0 = rng.below(static_cast<uint32_t>(H - size + 1)), x0 = rng.below(static_cast<uint32_t>(W - size + 1));
      for (int64_t y = y0; y < y0 + size; ++y)
        for (int64_t x = x0; x < x0 + size; ++x) {
          const int64_t p = (n * H + y) * W + x;
          img[p * 3] = cls == 1 ? 1.0f : (((x + y) & 1) ? 1.0f : -1.0f);
          lab[p] = cls;
        }
    }
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        if (y == 0 || x == 0 || y == H - 1 || x == W - 1) lab[(n * H + y) * W + x] = -1;
  }
  return b;
}

ToyTrainResult train_toy_net(const ToyTrainOptions& opt, const std::function<void(int64_t, double)>& on_step) {
  ToyNet net(opt.seed);
  SGD sgd({ParamGroup{"all", net.parameters(), 0.0}}, opt.lr, opt.momentum);
  ToyTrainResult res;
  const int64_t window = std::min<int64_t>(10, opt.steps);
  for (int64_t step = 0; step < opt.steps; ++step) {
    const ToyBatch batch = make_toy_batch(opt.seed, step, opt.batch, opt.size, opt.size);
    sgd.zero_grad();
    const Tensor loss = ops::softmax_nll_loss(net.forward(batch.images), batch.labels);
    loss.backward();
    sgd.step();
    const double l = loss.item();
    if (step < window) res.first_loss += l / static_cast<double>(window);
    if (step >= opt.steps - window) res.last_loss += l / static_cast<double>(window);
    if (on_step) on_step(step, l);
  }
  // Pixel accuracy on an unseen batch (upstream's definition: correct valid pixels / valid pixels).
  NoGradGuard no_grad;
  const ToyBatch test = make_toy_batch(opt.seed + 1, 0, opt.batch, opt.size, opt.size);
  const Tensor logits = net.forward(test.images);
  const float* lg = logits.data<float>();
  const int32_t* lab = test.labels.data<int32_t>();
  int64_t correct = 0, valid = 0;
  for (int64_t p = 0; p < test.labels.numel(); ++p) {
    if (lab[p] < 0) continue;
    const float* row = lg + p * 3;
    const int32_t pred = static_cast<int32_t>(std::max_element(row, row + 3) - row);
    correct += pred == lab[p];
    ++valid;
  }
  res.pixel_accuracy = static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(valid, 1));
  return res;
}

}  // namespace seg
