// Whole models against upstream's own PyTorch code (goldens from tools/golden/make_model_goldens.py).
//
// Both sides fill the same architecture with the closed-form weights of closed_form.h and run the
// same input ([2, 49, 41, 3], odd sizes, so every stride-2 step rounds up): first one training
// forward/backward (batch statistics; BN momentum 0.9, so the running statistics move from the
// formula's values most of the way to this batch's; Dropout2d off), then inference of image 0 on those
// running statistics (softmax after upsampling to 37x30). The reference is PyTorch in float64; we run
// in float64 and in float32. Compared: inference probabilities, the train-mode log-probabilities of
// the main and deep-supervision heads, loss and its terms, pixel accuracy, a few parameter
// gradients (every grad.*.npy of the case) and BN running statistics after the step (every after.*.npy).
//
// Bounds, per quantity, from PyTorch's own float32 error on the same case (the golden script runs it
// in float32 as well and stores max |f32 - f64| (and ||f32 - f64|| / ||f64||) per quantity in
// <case>/f32_error.json; tests/common/golden_bounds.h has the rules and why):
//
//   tensors, float32 run   per element 8 x PyTorch's max float32 error + the files' storage rounding
//                          (2^-24 relative); where that bound is not below half of max|ref| (the deep
//                          gradients of the two UPerNet cases, which PyTorch's own float32 run gets
//                          wrong by half their largest value and more), the relative L2 error over the
//                          tensor is bounded by 8 x PyTorch's + 2^-23 < 1/2 instead; either way no
//                          tensor of zeros (an all-zero gradient, however deep) can pass
//   tensors, float64 run   the files' storage rounding (2^-23 relative) + max(1e-12 max|ref|,
//                          8 x PyTorch's float32 error x 2^-29)
//   loss terms             relative: float32 8 x PyTorch's relative float32 error + 2^-23, float64 1e-12
//   pixel accuracy         float32: at most max(1, 8 x PyTorch's) pixels' argmax may flip; float64: exact
//
// SEG_GOLDEN_VERBOSE=1 prints our error beside PyTorch's for every quantity (docs/models.md lists
// the measured numbers).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/autograd.h"
#include "core/npy.h"
#include "layers/ops.h"
#include "models/registry.h"
#include "tests/common/compare_tensor.h"
#include "tests/common/golden_bounds.h"
#include "tests/models/closed_form.h"

using namespace seg;

namespace {

constexpr int64_t kNumClass = 17;
constexpr int64_t kSegH = 37, kSegW = 30;

std::string golden_dir() { return std::string(SEG_SOURCE_DIR) + "/tests/golden/models/"; }

// The loaded f32_error.json of one case and the checks that use it.
class GoldenBounds {
 public:
  GoldenBounds(const std::string& dir, DType dt) : dt_(dt) {
    tensors_ = test::read_f32_errors(dir);
    std::ifstream in(dir + "f32_error.json");
    json_ = nlohmann::json::parse(in);
  }

  void check_tensor(const Tensor& ours, const Tensor& ref, const std::string& what) const {
    REQUIRE_MESSAGE(tensors_.count(what), "no f32_error.json entry for " << what);
    test::golden_check(ours, ref, tensors_.at(what), dt_, what);
  }

  // A loss term: relative error.
  void check_loss(double ours, double ref, const std::string& what) const {
    CAPTURE(what);
    const double torch = json_.at("metrics." + what).get<double>();
    // float32: 8 x PyTorch's, plus one ulp of the float32 result itself (PyTorch's may be luckier
    // than half an ulp: 6.8e-9 on resnet18dilated-ppm_deepsup's deepsup_loss).
    const test::Tolerance tol{0, dt_ == DType::f64 ? 1e-12 : test::kF32Multiple * torch + std::ldexp(1.0, -23)};
    SEG_CHECK_CLOSE(ours, ref, tol);
    verbose(what, std::abs(ours - ref) / std::abs(ref), torch, "relative");
  }

  // Pixel accuracy: how many pixels' argmax differs from the reference's count.
  void check_accuracy(double ours, double ref, int64_t valid) const {
    const double torch = json_.at("metrics.acc_pixels").get<double>();
    const double pixels = dt_ == DType::f64 ? 0.0 : std::max(1.0, test::kF32Multiple * torch);
    // (+ 1e-3 pixel: upstream divides in float32, 6e-8 relative.)
    SEG_CHECK_CLOSE(ours * static_cast<double>(valid), ref * static_cast<double>(valid), test::Tolerance{pixels + 1e-3, 0});
    verbose("acc (pixels)", std::abs(ours - ref) * static_cast<double>(valid), torch, "of " + std::to_string(valid));
  }

 private:
  void verbose(const std::string& what, double ours, double torch, const std::string& extra) const {
    if (std::getenv("SEG_GOLDEN_VERBOSE"))
      MESSAGE(std::string(dtype_name(dt_)) << " " << what << ": max err " << ours << ", PyTorch f32 " << torch << " (x"
                              << (torch > 0 ? ours / torch : 0.0) << "), " << extra);
  }
  DType dt_;
  nlohmann::json json_;
  std::map<std::string, test::TorchF32Error> tensors_;
};

const Tensor* find_named(const std::vector<NamedTensor>& list, const std::string& name) {
  for (const auto& n : list)
    if (n.name == name) return n.tensor;
  return nullptr;
}

// Casts every floating parameter and buffer to `dt` (fields are replaced; the module sees the new tensors).
void cast_floating(Module& m, DType dt) {
  for (const auto& p : m.named_parameters()) {
    *p.tensor = p.tensor->detach().to(dt);
    p.tensor->set_requires_grad(true);
  }
  for (const auto& b : m.named_buffers())
    if (is_floating(b.tensor->dtype())) *b.tensor = b.tensor->to(dt);
}

void run_golden_case(const std::string& name, const std::string& encoder, const std::string& decoder, int64_t fc_dim,
                     DType dt) {
  CAPTURE(name);
  const std::string dtype = dtype_name(dt);
  CAPTURE(dtype);
  const std::string dir = golden_dir() + name + "/";
  const GoldenBounds bounds(dir, dt);
  BuildOptions opt;
  opt.bn_momentum = 0.9;
  opt.initialize = false;
  SegmentationModule model(build_encoder(encoder, fc_dim, opt), build_decoder(decoder, fc_dim, kNumClass, opt));
  test::fill_closed_form(*model.encoder);
  test::fill_closed_form(*model.decoder);
  cast_floating(model, dt);
  const Tensor images = read_npy(golden_dir() + "input.npy").to(dt);
  // Labels at the decoder's resolution: the encoder's stride, except UPerNet (on the stride-32 ResNets),
  // which fuses at stride 4.
  const int64_t stride = model.encoder->output_stride() == 32 ? 4 : model.encoder->output_stride();
  const Tensor labels = read_npy(golden_dir() + "labels_s" + std::to_string(stride) + ".npy");

  // One training step's forward and backward, dropout off (its masks are random).
  model.train();
  for (Dropout2d* d : model.dropouts()) d->eval();
  const TrainOutput out = model.forward_train(images, labels);
  bounds.check_tensor(ops::log_softmax(out.logits), read_npy(dir + "train_logprob.npy"), "train_logprob");
  const bool deep_sup = std::filesystem::exists(dir + "train_logprob_deepsup.npy");
  REQUIRE(deep_sup == out.deepsup_logits.defined());
  if (deep_sup)
    bounds.check_tensor(ops::log_softmax(out.deepsup_logits), read_npy(dir + "train_logprob_deepsup.npy"),
                        "train_logprob_deepsup");
  const auto metrics = read_npy(dir + "metrics.npy").to_vector<double>();  // loss, acc, main, deepsup
  bounds.check_loss(out.loss.item(), metrics[0], "loss");
  bounds.check_accuracy(out.acc.acc, metrics[1], out.acc.valid);
  bounds.check_loss(out.main_loss.item(), metrics[2], "main_loss");
  if (deep_sup) bounds.check_loss(out.deepsup_loss.item(), metrics[3], "deepsup_loss");

  out.loss.backward();
  const auto params = model.named_parameters();
  const auto buffers = model.named_buffers();
  int grads = 0, stats = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    const std::string stem = file.substr(0, file.size() - 4);  // drop ".npy"
    if (file.rfind("grad.", 0) == 0) {
      const Tensor* p = find_named(params, stem.substr(5));
      REQUIRE_MESSAGE(p != nullptr, "no parameter " << stem.substr(5));
      REQUIRE(p->grad().defined());
      bounds.check_tensor(p->grad(), read_npy(entry.path().string()), stem);
      ++grads;
    } else if (file.rfind("after.", 0) == 0) {
      const Tensor* b = find_named(buffers, stem.substr(6));
      REQUIRE_MESSAGE(b != nullptr, "no buffer " << stem.substr(6));
      bounds.check_tensor(*b, read_npy(entry.path().string()), stem);
      ++stats;
    }
  }
  CHECK(grads >= 3);
  CHECK(stats == 4);

  // Inference of image 0 on the running statistics the step left.
  model.eval();
  const Tensor prob = model.infer(images.slice(0, 0, 1), kSegH, kSegW);
  bounds.check_tensor(prob, read_npy(dir + "eval_prob.npy"), "eval_prob");
}

}  // namespace

// Fast subset: the MobileNetV2 models, about half a second per dtype.
TEST_CASE("golden: mobilenetv2dilated + c1_deepsup matches upstream PyTorch") {
  run_golden_case("mobilenetv2dilated-c1_deepsup", "mobilenetv2dilated", "c1_deepsup", 320, DType::f64);
  run_golden_case("mobilenetv2dilated-c1_deepsup", "mobilenetv2dilated", "c1_deepsup", 320, DType::f32);
}
TEST_CASE("golden: mobilenetv2dilated + c1 matches upstream PyTorch") {
  run_golden_case("mobilenetv2dilated-c1", "mobilenetv2dilated", "c1", 320, DType::f64);
  run_golden_case("mobilenetv2dilated-c1", "mobilenetv2dilated", "c1", 320, DType::f32);
}

// The bigger models: slow suite.
TEST_CASE("golden: mobilenetv2dilated + ppm matches upstream PyTorch" * doctest::test_suite("slow")) {
  run_golden_case("mobilenetv2dilated-ppm", "mobilenetv2dilated", "ppm", 320, DType::f64);
  run_golden_case("mobilenetv2dilated-ppm", "mobilenetv2dilated", "ppm", 320, DType::f32);
}
TEST_CASE("golden: resnet18dilated + ppm_deepsup matches upstream PyTorch" * doctest::test_suite("slow")) {
  run_golden_case("resnet18dilated-ppm_deepsup", "resnet18dilated", "ppm_deepsup", 512, DType::f64);
  run_golden_case("resnet18dilated-ppm_deepsup", "resnet18dilated", "ppm_deepsup", 512, DType::f32);
}
TEST_CASE("golden: resnet50dilated + ppm_deepsup matches upstream PyTorch" * doctest::test_suite("slow")) {
  run_golden_case("resnet50dilated-ppm_deepsup", "resnet50dilated", "ppm_deepsup", 2048, DType::f64);
  run_golden_case("resnet50dilated-ppm_deepsup", "resnet50dilated", "ppm_deepsup", 2048, DType::f32);
}
TEST_CASE("golden: resnet101dilated + ppm_deepsup matches upstream PyTorch" * doctest::test_suite("slow")) {
  run_golden_case("resnet101dilated-ppm_deepsup", "resnet101dilated", "ppm_deepsup", 2048, DType::f64);
  run_golden_case("resnet101dilated-ppm_deepsup", "resnet101dilated", "ppm_deepsup", 2048, DType::f32);
}
TEST_CASE("golden: resnet50 + upernet matches upstream PyTorch" * doctest::test_suite("slow")) {
  run_golden_case("resnet50-upernet", "resnet50", "upernet", 2048, DType::f64);
  run_golden_case("resnet50-upernet", "resnet50", "upernet", 2048, DType::f32);
}
TEST_CASE("golden: resnet101 + upernet matches upstream PyTorch" * doctest::test_suite("slow")) {
  run_golden_case("resnet101-upernet", "resnet101", "upernet", 2048, DType::f64);
  run_golden_case("resnet101-upernet", "resnet101", "upernet", 2048, DType::f32);
}
TEST_CASE("golden: hrnetv2 + c1 matches upstream PyTorch" * doctest::test_suite("slow")) {
  run_golden_case("hrnetv2-c1", "hrnetv2", "c1", 720, DType::f64);
  run_golden_case("hrnetv2-c1", "hrnetv2", "c1", 720, DType::f32);
}
