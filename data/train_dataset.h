// TrainDataset: upstream's TrainDataset.__getitem__ (spec/upstream.md section 2.3) as a function of
// an explicit plan. One call builds one GPU's sub-batch:
//
//   for each sample: load image + label, check them, flip both if the plan says so,
//     resize to (w_i, h_i) = int32(size * min(short / short_side, imgMaxSize / long_side)),
//     image BILINEAR, label NEAREST (Pillow-exact),
//     label: paste into a 0-filled canvas rounded up to a multiple of r, NEAREST-downsample by r;
//   canvas: H = roundup(max h_i, padding_constant), W likewise;
//   images  f32 [B, H, W, 3]  ImageNet-normalised, top-left aligned, padding 0 (the mean colour);
//   labels  i32 [B, H/r, W/r] label value - 1 (0 = unlabeled becomes -1 = ignore), padding -1.
//
// Deviation (DESIGN decision 12): upstream HEAD leaves the label padding at 0, i.e. class 0
// ("wall"); here it is -1 (ignore), which is what upstream did before commit 71c559e.
//
// Which samples, which short side and which flips come from the TrainSampler (data/train_sampler.h),
// so this class has no random state: load() is a pure, thread-safe function of the plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/odgt.h"
#include "data/options.h"
#include "data/transforms.h"

namespace seg::data {

// What the sampler decided for one sub-batch.
struct SubBatchPlan {
  int64_t iteration = 0;
  int gpu = 0;                   // index of the sub-batch within the iteration
  int short_side = 0;            // one of DATASET.imgSizes
  std::vector<int64_t> samples;  // indices into the training list
  std::vector<uint8_t> flips;    // 1 = mirror image and label, one per sample
};

// A sample that could not be used (only with --on-bad-sample skip).
struct BadSample {
  int64_t index = -1;    // in the list
  std::string message;   // the full data error, file and list line included
};

struct TrainSubBatch {
  Tensor images;                 // f32 [B, H, W, 3], normalised; padding 0
  Tensor labels;                 // i32 [B, H/r, W/r]; -1 = ignore (unlabeled and padding)
  SubBatchPlan plan;             // the plan as loaded (bad samples replaced when skipping)
  std::vector<ScaledSize> sizes; // each sample's (w_i, h_i) inside the canvas
  std::vector<BadSample> skipped;
  int batch_size() const { return static_cast<int>(plan.samples.size()); }
};

class TrainDataset {
 public:
  // Reads options.list_train (joined with root_dataset); the options must validate().
  explicit TrainDataset(const DatasetOptions& options);
  TrainDataset(const DatasetOptions& options, OdgtList list);

  const DatasetOptions& options() const { return options_; }
  const OdgtList& list() const { return list_; }
  size_t size() const { return list_.size(); }
  bool is_portrait(int64_t index) const;  // the list's height > width (aspect grouping)

  // Builds the sub-batch of `plan`. Thread-safe. A bad sample throws Error(data) under
  // on_bad_sample=fail; under skip it is replaced by the next loadable sample of the same
  // orientation in list order (deterministic) and reported in `skipped`.
  TrainSubBatch load(const SubBatchPlan& plan) const;

 private:
  DatasetOptions options_;
  OdgtList list_;
};

}  // namespace seg::data
