// Evaluation exactly as upstream's eval.py (spec section 4): for every image, the softmax
// probabilities of every scale in DATASET.imgSizes, each upsampled to the label's size, are averaged;
// the prediction is their argmax. Pixel accuracy is correct/valid over the whole set (valid = a
// labelled pixel); IoU per class is (sum of intersections) / (sum of unions) over the set, and mIoU
// their mean over all classes.
#pragma once

#include "core/comm.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/amp_policy.h"
#include "data/eval_dataset.h"
#include "models/segmentation_module.h"
#include "tools/run_setup.h"

namespace seg::cli {

struct EvalOptions {
  AmpConfig amp;                // half inference under O1-O3
  std::string visualize_dir;    // "" = no pictures; else image | ground truth | prediction PNGs
  int64_t max_images = 0;       // 0 = the whole list
  // Several ranks evaluate one list together: rank r takes entries r, r + size, ... and the counts
  // (intersections, unions, correct and valid pixels, images) are summed over the ranks, so every
  // rank returns the whole list's result. Null or size 1: this process does all.
  Communicator* comm = nullptr;
};

struct EvalResult {
  std::vector<int64_t> intersection, union_;  // per class, summed over the set
  std::vector<double> iou;                     // per class
  double mean_iou = 0;
  int64_t correct = 0, valid = 0;
  double pixel_accuracy = 0;  // correct / valid
  int64_t images = 0, skipped = 0;
  double seconds = 0;          // inference time (data loading excluded)
};

// The multi-scale averaged probabilities [H, W, K] for one sample (upstream eval.py's `scores`), on the
// model's device (the images are copied there).
Tensor multiscale_probabilities(SegmentationModule& model, const data::EvalSample& sample, const AmpConfig& amp);

// Adds one prediction (i32 [H, W]) against its label (i32 [H, W], -1 = unlabeled) to the result.
void accumulate(EvalResult& r, const Tensor& pred, const Tensor& label, int64_t num_class);
void finalize(EvalResult& r);

// on_image(index, total) is called after each image (progress display).
EvalResult evaluate(SegmentationModule& model, const data::EvalDataset& dataset, const ClassTable& classes,
                    const EvalOptions& opt, const std::function<void(int64_t, int64_t)>& on_image = {});

// Upstream's report: per-class IoU lines with names, then the summary line.
std::string format_eval_report(const EvalResult& r, const ClassTable& classes);

}  // namespace seg::cli
