// ValDataset and TestDataset: upstream's multi-scale evaluation inputs (spec/upstream.md section 2.4).
//
// For each short side s in DATASET.imgSizes (all of them, in order):
//   scale = min(s / min(H, W), imgMaxSize / max(H, W)) from the decoded image's own size,
//   (tw, th) = roundup(int(W * scale), padding_constant), roundup(int(H * scale), padding_constant),
//   resize straight to (tw, th) BILINEAR (no padding, no flip; the aspect ratio changes slightly),
//   normalise -> img_data[k]: f32 [1, th, tw, 3].
// Plus the original image (u8 [H, W, 3]) and, for validation, the label at full resolution shifted
// by -1 (i32 [1, H, W], -1 = unlabeled).
//
// Validation lists are joined with DATASET.root_dataset; test inputs are used as given (upstream's
// test.py takes paths from the command line).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/odgt.h"
#include "data/options.h"
#include "data/ordered_workers.h"
#include "data/train_dataset.h"

namespace seg::data {

struct EvalSample {
  int64_t index = 0;             // in the list
  Tensor img_ori;                // u8 [H, W, 3]
  std::vector<Tensor> img_data;  // one per imgSizes entry: f32 [1, th, tw, 3], normalised
  Tensor seg_label;              // i32 [1, H, W], -1 = unlabeled; undefined for test inputs
  std::string info;              // the image path (upstream's 'info')
};

class EvalDataset {
 public:
  int64_t size() const { return static_cast<int64_t>(list_.size()); }
  const OdgtList& list() const { return list_; }
  const DatasetOptions& options() const { return options_; }
  bool has_labels() const { return with_labels_; }
  // Thread-safe. Error(data) naming the file and list line for a bad sample.
  EvalSample get(int64_t index) const;

 protected:
  EvalDataset(const DatasetOptions& options, OdgtList list, bool with_labels);

 private:
  DatasetOptions options_;
  OdgtList list_;
  bool with_labels_;
};

class ValDataset : public EvalDataset {
 public:
  explicit ValDataset(const DatasetOptions& options);  // reads options.list_val
  ValDataset(const DatasetOptions& options, OdgtList list);
};

class TestDataset : public EvalDataset {
 public:
  // Image paths as given (no root); upstream's test.py list.
  TestDataset(const DatasetOptions& options, const std::vector<std::string>& image_paths);
  // An odgt list; fpath_segm is ignored, paths are not joined with the root.
  TestDataset(const DatasetOptions& options, const std::string& odgt_path);
};

// Runs EvalDataset::get on worker threads and returns samples in list order. With
// on_bad_sample = skip, bad samples are left out and counted.
class EvalLoader {
 public:
  explicit EvalLoader(const EvalDataset& dataset);  // `dataset` must outlive the loader
  // Only the entries first, first + stride, ... below `limit` (-1: the whole list): rank `first` of
  // `stride` ranks evaluating one list together (upstream's eval_multipro).
  EvalLoader(const EvalDataset& dataset, int64_t first, int64_t stride, int64_t limit = -1);
  ~EvalLoader();
  // The next sample, or nothing at the end of the list.
  std::optional<EvalSample> next();
  int64_t skipped() const { return skipped_; }
  const std::vector<BadSample>& first_skipped() const { return first_skipped_; }
  double wait_seconds() const { return wait_seconds_; }

 private:
  struct Item {
    std::optional<EvalSample> sample;
    BadSample bad;
  };
  const EvalDataset& dataset_;
  std::unique_ptr<OrderedWorkers<int64_t, Item>> workers_;
  int64_t next_submit_ = 0;
  int64_t stride_ = 1;
  int64_t end_ = 0;  // one past the last index this loader may submit
  int64_t remaining_ = 0;
  int64_t prefetch_ = 0;
  int64_t skipped_ = 0;
  std::vector<BadSample> first_skipped_;
  double wait_seconds_ = 0.0;
};

}  // namespace seg::data
