// SegmentationModule: loss composition, pixel accuracy, inference, input checks.
#include <doctest/doctest.h>

#include <cmath>

#include "core/rng.h"
#include "models/registry.h"
#include "tests/common/compare.h"

using namespace seg;
using seg::test::Tolerance;

namespace {

Tensor noise_images(int64_t n, int64_t h, int64_t w) {
  PhiloxStream rng(7, RngPurpose::test);
  Tensor t = Tensor::empty({n, h, w, 3});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = rng.normal();
  return t;
}

std::shared_ptr<SegmentationModule> mobilenet_c1(const char* decoder, double deep_sup_scale) {
  ModelConfig cfg;
  cfg.arch_encoder = "mobilenetv2dilated";
  cfg.arch_decoder = decoder;
  cfg.fc_dim = 320;
  cfg.num_class = 5;
  cfg.deep_sup_scale = deep_sup_scale;
  return build_segmentation_module(cfg);
}

}  // namespace

TEST_CASE("pixel accuracy is upstream's: argmax of the main head over labels >= 0") {
  // 1 x 2 x 2 pixels, 3 classes: argmax 0, 2, 1, 1.
  const Tensor logits = Tensor::from_vector<float>({1, 2, 2, 3}, {5, 1, 0, 0, 1, 9, 0, 3, 2, -1, 4, 0});
  const Tensor labels = Tensor::from_vector<int32_t>({1, 2, 2}, {0, 1, -1, 1});
  const PixelAccuracy a = pixel_accuracy(logits, labels);
  CHECK(a.valid == 3);
  CHECK(a.correct == 2);
  SEG_CHECK_CLOSE(a.acc, 2.0 / 3.0, Tolerance{0, 1e-9});  // 2 / (3 + 1e-10), as upstream
  const PixelAccuracy none = pixel_accuracy(logits, Tensor::full({1, 2, 2}, -1, DType::i32));
  CHECK(none.valid == 0);
  SEG_CHECK_CLOSE(none.acc, 0.0, Tolerance{});  // 0 / (0 + 1e-10)
}

TEST_CASE("training loss = NLL(main) + deep_sup_scale * NLL(deep supervision); the loss backpropagates") {
  const Tensor images = noise_images(2, 33, 25);  // stride 8: 5 x 4
  Tensor labels = Tensor::zeros({2, 5, 4}, DType::i32);
  for (int64_t i = 0; i < labels.numel(); ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(i % 6) - 1;
  auto m = mobilenet_c1("c1_deepsup", 0.4);
  const TrainOutput out = m->forward_train(images, labels);
  REQUIRE(out.deepsup_loss.defined());
  CHECK(out.logits.shape() == Shape{2, 5, 4, 5});
  CHECK(out.deepsup_logits.shape() == Shape{2, 5, 4, 5});
  SEG_CHECK_CLOSE(out.loss.item(), out.main_loss.item() + 0.4 * out.deepsup_loss.item(), Tolerance{0, 1e-6});  // f32 sum
  out.loss.backward();
  for (const auto& p : m->named_parameters()) {
    CAPTURE(p.name);
    CHECK(p.tensor->grad().defined());
  }
  // Without deep supervision the loss is the main term alone.
  const TrainOutput plain = mobilenet_c1("c1", 0.4)->forward_train(images, labels);
  CHECK_FALSE(plain.deepsup_loss.defined());
  SEG_CHECK_CLOSE(plain.loss.item(), plain.main_loss.item(), Tolerance{});
}

TEST_CASE("inference: softmax probabilities at the requested size, no autograd graph") {
  auto m = mobilenet_c1("c1_deepsup", 0.4);
  m->eval();
  const Tensor prob = m->infer(noise_images(1, 33, 25), 31, 23);
  CHECK(prob.shape() == Shape{1, 31, 23, 5});
  CHECK_FALSE(prob.requires_grad());
  const auto v = prob.to_vector<float>();
  std::vector<double> sums;
  for (size_t p = 0; p < v.size(); p += 5) {
    double s = 0;
    for (size_t k = 0; k < 5; ++k) s += v[p + k];
    sums.push_back(s);
  }
  SEG_CHECK_CLOSE(sums, std::vector<double>(sums.size(), 1.0), Tolerance{1e-6, 0});  // five f32 roundings
}

TEST_CASE("labels that do not match the decoder output are an error that says which config keys to check") {
  auto m = mobilenet_c1("c1", 0.4);
  CHECK_THROWS_WITH_AS(m->forward_train(noise_images(1, 33, 25), Tensor::zeros({1, 4, 4}, DType::i32)),
                       doctest::Contains("segm_downsampling_rate"), Error);
  CHECK_THROWS_AS(m->forward_train(noise_images(1, 33, 25), Tensor::zeros({1, 5, 4}, DType::i64)), Error);
  CHECK_THROWS_AS(m->infer(Tensor::zeros({1, 33, 25, 4}), 10, 10), Error);
}
