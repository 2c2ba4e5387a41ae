// The evaluation arithmetic of tools/evaluate.cpp (accumulate, finalize) against upstream's
// `intersectionAndUnion`, `accuracy` and `AverageMeter` (mit_semseg/utils.py, spec section 4):
// hand-made maps worked out here, and goldens from upstream's own code
// (tools/golden/make_eval_goldens.py: the same hand-made maps and random ADE20K-sized ones).
//
// Upstream's rules, which the cases below pin down:
//   * unlabeled pixels (label -1) count nowhere: not in the accuracy, not in any class's union,
//     whatever is predicted there;
//   * intersections and unions are summed over the set, IoU_c = sum I / (sum U + 1e-10), and the
//     mIoU is the mean over *all* classes, a class absent from both prediction and labels adding 0;
//   * pixel accuracy is sum correct / sum valid over the set (upstream's pixel-weighted meter of
//     acc_i = correct_i / (valid_i + 1e-10)), so an all-ignore image changes nothing.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/npy.h"
#include "tests/common/compare.h"
#include "tools/evaluate.h"

using namespace seg;
using seg::test::Tolerance;

namespace {
Tensor map_of(int64_t h, int64_t w, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>({h, w}, std::move(v)); }

std::string golden_dir(const std::string& name) { return std::string(SEG_SOURCE_DIR) + "/tests/golden/eval/" + name + "/"; }

// One image's result alone.
cli::EvalResult one(const Tensor& pred, const Tensor& label, int64_t num_class) {
  cli::EvalResult r;
  cli::accumulate(r, pred, label, num_class);
  cli::finalize(r);
  return r;
}
}  // namespace

TEST_CASE("evaluation arithmetic on a hand-made map: ignore pixels, a class predicted where unlabeled") {
  // 5 classes. Label (-1 unlabeled) and prediction, 3 x 4:
  //   label  0  0  1  1     pred  0  1  1  1
  //          0 -1  1  4           0  2  1  0
  //         -1 -1  4  4           3  2  4  1
  // 9 labelled pixels, 6 right. Class 0: labels 3, predicted (on labelled pixels) 3, both 2 -> I 2,
  // U 4. Class 1: labels 3, predicted 5, both 3 -> 3 / 5. Class 4: labels 3, predicted 1 -> 1 / 3.
  // Classes 2 and 3 are predicted only where unlabeled: I 0, U 0.
  const Tensor label = map_of(3, 4, {0, 0, 1, 1, 0, -1, 1, 4, -1, -1, 4, 4});
  const Tensor pred = map_of(3, 4, {0, 1, 1, 1, 0, 2, 1, 0, 3, 2, 4, 1});
  const cli::EvalResult r = one(pred, label, 5);
  CHECK(r.valid == 9);
  CHECK(r.correct == 6);
  SEG_CHECK_CLOSE(r.intersection, std::vector<int64_t>({2, 3, 0, 0, 1}), Tolerance{});
  SEG_CHECK_CLOSE(r.union_, std::vector<int64_t>({4, 5, 0, 0, 3}), Tolerance{});
  // IoU_c = I / (U + 1e-10): 0/0 gives 0, and the mean runs over all 5 classes.
  const std::vector<double> iou = {2 / (4 + 1e-10), 3 / (5 + 1e-10), 0, 0, 1 / (3 + 1e-10)};
  SEG_CHECK_CLOSE(r.iou, iou, Tolerance{});
  SEG_CHECK_CLOSE(r.mean_iou, (iou[0] + iou[1] + iou[4]) / 5, Tolerance{0, 1e-15});
  SEG_CHECK_CLOSE(r.pixel_accuracy, 6.0 / 9.0, Tolerance{0, 1e-15});
}

TEST_CASE("evaluation arithmetic: an all-ignore image adds nothing; sums run over the set, not per image") {
  const Tensor a_label = map_of(1, 4, {0, 0, 1, -1}), a_pred = map_of(1, 4, {0, 1, 1, 1});
  const Tensor b_label = map_of(1, 3, {-1, -1, -1}), b_pred = map_of(1, 3, {0, 1, 2});
  const Tensor c_label = map_of(1, 2, {2, 2}), c_pred = map_of(1, 2, {2, 0});
  // The all-ignore image alone: nothing valid, every IoU 0, accuracy 0 (upstream: 0 / (0 + 1e-10)).
  const cli::EvalResult b = one(b_pred, b_label, 3);
  CHECK(b.valid == 0);
  SEG_CHECK_CLOSE(b.union_, std::vector<int64_t>(3, 0), Tolerance{});
  SEG_CHECK_CLOSE(b.mean_iou, 0.0, Tolerance{});
  SEG_CHECK_CLOSE(b.pixel_accuracy, 0.0, Tolerance{});
  // a, b, c together: a gives I (1, 1, 0), U (2, 2, 0); c gives I (0, 0, 1), U (1, 0, 2); b nothing...
  cli::EvalResult r;
  for (const auto& [p, l] : {std::pair{a_pred, a_label}, std::pair{b_pred, b_label}, std::pair{c_pred, c_label}})
    cli::accumulate(r, p, l, 3);
  cli::finalize(r);
  SEG_CHECK_CLOSE(r.intersection, std::vector<int64_t>({1, 1, 1}), Tolerance{});
  SEG_CHECK_CLOSE(r.union_, std::vector<int64_t>({3, 2, 2}), Tolerance{});
  // ... so IoU_0 = 1/3 from the summed counts, not the mean of the per-image IoUs (1/2 and 0).
  SEG_CHECK_CLOSE(r.iou, std::vector<double>({1 / (3 + 1e-10), 1 / (2 + 1e-10), 1 / (2 + 1e-10)}), Tolerance{});
  CHECK(r.valid == 5);
  CHECK(r.correct == 3);
  SEG_CHECK_CLOSE(r.pixel_accuracy, 3.0 / 5.0, Tolerance{0, 1e-15});
  CHECK(r.images == 3);
}

TEST_CASE("evaluation arithmetic equals upstream's own code (goldens of make_eval_goldens.py)") {
  for (const char* name : {"hand", "random"}) {
    CAPTURE(name);
    std::ifstream in(golden_dir(name) + "results.json");
    REQUIRE(in.good());
    const nlohmann::json g = nlohmann::json::parse(in);
    const int64_t num_class = g.at("num_class").get<int64_t>();
    const auto& images = g.at("images");
    cli::EvalResult r;
    for (size_t i = 0; i < images.size(); ++i) {
      CAPTURE(i);
      const Tensor pred = read_npy(golden_dir(name) + "pred_" + std::to_string(i) + ".npy");
      const Tensor label = read_npy(golden_dir(name) + "label_" + std::to_string(i) + ".npy");
      // Per image: upstream's intersectionAndUnion and accuracy.
      const cli::EvalResult alone = one(pred, label, num_class);
      const auto& up = images[i];
      SEG_CHECK_CLOSE(alone.intersection, up.at("intersection").get<std::vector<int64_t>>(), Tolerance{});
      SEG_CHECK_CLOSE(alone.union_, up.at("union").get<std::vector<int64_t>>(), Tolerance{});
      CHECK(alone.valid == up.at("pix").get<int64_t>());
      // upstream: correct / (valid + 1e-10); ours correct / valid: 1e-10 / valid apart at most.
      SEG_CHECK_CLOSE(alone.pixel_accuracy, up.at("acc").get<double>(), Tolerance{0, 1e-10});
      cli::accumulate(r, pred, label, num_class);
    }
    cli::finalize(r);
    const auto& d = g.at("dataset");
    SEG_CHECK_CLOSE(r.intersection, d.at("intersection").get<std::vector<int64_t>>(), Tolerance{});
    SEG_CHECK_CLOSE(r.union_, d.at("union").get<std::vector<int64_t>>(), Tolerance{});
    SEG_CHECK_CLOSE(r.iou, d.at("iou").get<std::vector<double>>(), Tolerance{0, 1e-15});  // the same division
    SEG_CHECK_CLOSE(r.mean_iou, d.at("miou").get<double>(), Tolerance{0, 1e-14});          // numpy's pairwise sum
    SEG_CHECK_CLOSE(r.pixel_accuracy, d.at("accuracy").get<double>(), Tolerance{0, 1e-10});
  }
}
