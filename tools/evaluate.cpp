#include "tools/evaluate.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/autograd.h"
#include "core/fileio.h"
#include "data/image.h"
#include "data/image_codec.h"
#include "layers/amp_model.h"
#include "layers/autocast.h"
#include "layers/ops.h"

namespace seg::cli {

Tensor multiscale_probabilities(SegmentationModule& model, const data::EvalSample& sample, const AmpConfig& amp) {
  NoGradGuard no_grad;
  const int64_t H = sample.img_ori.size(0), W = sample.img_ori.size(1);
  Tensor scores;
  for (const Tensor& img : sample.img_data) {
    Tensor probs;
    {
      Autocast ac(amp);
      probs = model.infer(img.to(model.device()).to(amp_input_dtype(amp)), H, W).to(DType::f32);  // [1, H, W, K]
    }
    if (!scores.defined()) scores = probs.new_zeros(probs.shape());
    scores = ops::add(scores, ops::scale(probs, 1.0 / static_cast<double>(sample.img_data.size())));
  }
  return scores.view({H, W, scores.size(-1)});
}

void accumulate(EvalResult& r, const Tensor& pred, const Tensor& label, int64_t num_class) {
  if (r.intersection.empty()) {
    r.intersection.assign(static_cast<size_t>(num_class), 0);
    r.union_.assign(static_cast<size_t>(num_class), 0);
  }
  const int32_t* p = pred.data<int32_t>();
  const int32_t* l = label.data<int32_t>();
  std::vector<int64_t> area_pred(static_cast<size_t>(num_class), 0), area_lab(static_cast<size_t>(num_class), 0),
      inter(static_cast<size_t>(num_class), 0);
  for (int64_t i = 0; i < label.numel(); ++i) {
    if (l[i] < 0) continue;  // unlabeled: not counted (upstream zeroes the prediction there)
    ++r.valid;
    ++area_lab[static_cast<size_t>(l[i])];
    ++area_pred[static_cast<size_t>(p[i])];
    if (p[i] == l[i]) {
      ++r.correct;
      ++inter[static_cast<size_t>(l[i])];
    }
  }
  for (int64_t k = 0; k < num_class; ++k) {
    r.intersection[k] += inter[k];
    r.union_[k] += area_pred[k] + area_lab[k] - inter[k];
  }
  ++r.images;
}

void finalize(EvalResult& r) {
  r.iou.resize(r.intersection.size());
  double sum = 0;
  for (size_t k = 0; k < r.iou.size(); ++k) {
    r.iou[k] = static_cast<double>(r.intersection[k]) / (static_cast<double>(r.union_[k]) + 1e-10);
    sum += r.iou[k];
  }
  r.mean_iou = r.iou.empty() ? 0.0 : sum / static_cast<double>(r.iou.size());
  r.pixel_accuracy = r.valid > 0 ? static_cast<double>(r.correct) / static_cast<double>(r.valid) : 0.0;
}

namespace {
data::Image colorize(const Tensor& classes_hw, const std::vector<data::Rgb>& palette) {
  const int H = static_cast<int>(classes_hw.size(0)), W = static_cast<int>(classes_hw.size(1));
  data::Image out(W, H, 3);
  const int32_t* c = classes_hw.data<int32_t>();
  for (int64_t i = 0; i < classes_hw.numel(); ++i) {
    if (c[i] < 0 || c[i] >= static_cast<int32_t>(palette.size())) continue;  // unlabeled: black
    out.pixels[i * 3] = palette[c[i]].r;
    out.pixels[i * 3 + 1] = palette[c[i]].g;
    out.pixels[i * 3 + 2] = palette[c[i]].b;
  }
  return out;
}

std::string png_name(const std::string& info) {
  std::string base = std::filesystem::path(info).filename().string();
  const size_t dot = base.rfind('.');
  return (dot == std::string::npos ? base : base.substr(0, dot)) + ".png";
}
}  // namespace

EvalResult evaluate(SegmentationModule& model, const data::EvalDataset& dataset, const ClassTable& classes,
                    const EvalOptions& opt, const std::function<void(int64_t, int64_t)>& on_image) {
  model.eval();
  const int64_t num_class = static_cast<int64_t>(classes.names.size());
  EvalResult r;
  r.intersection.assign(static_cast<size_t>(num_class), 0);
  r.union_.assign(static_cast<size_t>(num_class), 0);
  if (!opt.visualize_dir.empty()) make_dirs(opt.visualize_dir);
  const int64_t total = opt.max_images > 0 ? std::min(opt.max_images, dataset.size()) : dataset.size();
  const int rank = opt.comm ? opt.comm->rank() : 0, ranks = opt.comm ? opt.comm->size() : 1;
  data::EvalLoader loader(dataset, rank, ranks, total);
  int64_t done = 0;
  while (done < total) {
    std::optional<data::EvalSample> sample = loader.next();
    if (!sample) break;
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor scores = multiscale_probabilities(model, *sample, opt.amp);
    const Tensor pred = ops::argmax_channels(scores).to(Device::cpu());  // i32 [H, W]: one read-back per image
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Tensor label = sample->seg_label.view({pred.size(0), pred.size(1)});
    accumulate(r, pred, label, num_class);
    if (!opt.visualize_dir.empty()) {
      // image | ground truth | prediction, as upstream's visualize_result.
      const data::Image img = data::tensor_to_image(sample->img_ori);
      const data::Image gt = colorize(label, classes.palette), pr = colorize(pred, classes.palette);
      data::Image panel(img.width * 3, img.height, 3);
      data::paste(panel, img, 0, 0);
      data::paste(panel, gt, img.width, 0);
      data::paste(panel, pr, 2 * img.width, 0);
      data::save_png(opt.visualize_dir + "/" + png_name(sample->info), panel);
    }
    ++done;
    if (on_image) on_image(done, total);
  }
  r.skipped = loader.skipped();
  if (ranks > 1) {
    // Exact: every count is an integer far below 2^53.
    std::vector<double> counts;
    for (size_t k = 0; k < r.intersection.size(); ++k) counts.push_back(static_cast<double>(r.intersection[k]));
    for (size_t k = 0; k < r.union_.size(); ++k) counts.push_back(static_cast<double>(r.union_[k]));
    for (int64_t v : {r.correct, r.valid, r.images, r.skipped}) counts.push_back(static_cast<double>(v));
    counts.push_back(r.seconds);
    opt.comm->allreduce_sum(counts.data(), static_cast<int64_t>(counts.size()));
    size_t i = 0;
    for (int64_t& v : r.intersection) v = static_cast<int64_t>(counts[i++]);
    for (int64_t& v : r.union_) v = static_cast<int64_t>(counts[i++]);
    for (int64_t* v : {&r.correct, &r.valid, &r.images, &r.skipped}) *v = static_cast<int64_t>(counts[i++]);
    r.seconds = counts[i];  // inference seconds summed over the ranks
  }
  finalize(r);
  return r;
}

std::string format_eval_report(const EvalResult& r, const ClassTable& classes) {
  std::string out;
  char line[256];
  for (size_t k = 0; k < r.iou.size(); ++k) {
    std::snprintf(line, sizeof line, "class [%zu] %-20s IoU: %.4f\n", k, classes.names[k].c_str(), r.iou[k]);
    out += line;
  }
  std::snprintf(line, sizeof line, "[Eval Summary]:\nMean IoU: %.4f, Accuracy: %.2f%%, Inference Time: %.4fs\n",
                r.mean_iou, 100.0 * r.pixel_accuracy, r.images > 0 ? r.seconds / static_cast<double>(r.images) : 0.0);
  out += line;
  if (r.skipped > 0) out += "skipped " + std::to_string(r.skipped) + " bad sample(s)\n";
  return out;
}

}  // namespace seg::cli
