#include "data/train_dataset.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "data/batch_memory.h"
#include "data/resize.h"
#include "data/sample.h"

namespace seg::data {

namespace {

OdgtList read_train_list(const DatasetOptions& options) {
  options.validate();
  OdgtReadOptions read;
  read.root = options.root_dataset;
  read.require_segm = true;
  read.require_size = true;  // the training scale comes from the list's width/height
  read.max_sample = options.max_sample;
  read.start_idx = options.start_idx;
  read.end_idx = options.end_idx;
  return read_odgt(options.list_train, read);
}

// The label of one sample at network-output resolution: upstream pastes the resized label into a
// 0-filled canvas whose sides are multiples of r, then NEAREST-downsamples it by r. Returns the
// 1-channel image of raw label values (0 = unlabeled).
Image downsampled_label(const Image& label, int rate) {
  Image canvas(round_up_multiple(label.width, rate), round_up_multiple(label.height, rate), 1, 0);
  paste(canvas, label, 0, 0);
  return resize_nearest(canvas, canvas.width / rate, canvas.height / rate);
}

}  // namespace

TrainDataset::TrainDataset(const DatasetOptions& options) : TrainDataset(options, read_train_list(options)) {}

TrainDataset::TrainDataset(const DatasetOptions& options, OdgtList list)
    : options_(options), list_(std::move(list)) {
  options_.validate();
  if (list_.records.empty())
    throw Error(ErrorKind::data, "the training list has no entries").file(list_.path).hint(
        "check DATASET.list_train (and max_sample/start_idx/end_idx)");
  for (const OdgtRecord& r : list_.records)
    if (r.width <= 0 || r.height <= 0 || r.fpath_segm.empty())
      throw Error(ErrorKind::data, "a training list entry needs fpath_segm, width and height")
          .file(list_.path, r.line);
}

bool TrainDataset::is_portrait(int64_t index) const {
  const OdgtRecord& r = list_.records[static_cast<size_t>(index)];
  return r.height > r.width;
}

TrainSubBatch TrainDataset::load(const SubBatchPlan& plan) const {
  SEG_ASSERT(plan.samples.size() == plan.flips.size() && !plan.samples.empty());
  const int n = static_cast<int>(list_.size());
  TrainSubBatch out;
  out.plan = plan;

  // 1. Decode and check every sample; under `skip`, replace a bad one by the next loadable sample
  //    of the same orientation in list order, so the result depends only on the plan.
  std::vector<LoadedSample> loaded;
  for (size_t j = 0; j < plan.samples.size(); ++j) {
    int64_t index = plan.samples[j];
    for (int attempt = 0;; ++attempt) {
      try {
        loaded.push_back(load_sample(list_[index], list_.path, options_.num_class, /*check_list_size=*/true));
        break;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::data || options_.on_bad_sample == BadSamplePolicy::fail) throw;
        out.skipped.push_back({index, e.what()});
        const bool portrait = is_portrait(plan.samples[j]);
        int64_t next = index;
        do {
          next = (next + 1) % n;
        } while (next != plan.samples[j] && is_portrait(next) != portrait);
        if (next == plan.samples[j] || attempt + 1 >= n)
          throw Error(ErrorKind::data, "no loadable training sample left of this orientation")
              .file(list_.path)
              .hint("every candidate failed to load; run 'segtrain data check' on the list");
        index = next;
      }
    }
    out.plan.samples[j] = index;
  }

  // 2. Sizes: each sample's scaled size, from the list's width/height as upstream; the canvas is the
  //    largest of them rounded up to padding_constant.
  const int b = static_cast<int>(loaded.size());
  const int rate = options_.segm_downsampling_rate;
  int max_w = 0, max_h = 0;
  for (int j = 0; j < b; ++j) {
    const OdgtRecord& r = list_[out.plan.samples[j]];
    out.sizes.push_back(train_scaled_size(r.width, r.height, plan.short_side, options_.imgMaxSize));
    max_w = std::max(max_w, out.sizes.back().width);
    max_h = std::max(max_h, out.sizes.back().height);
  }
  const int canvas_w = round_up_multiple(max_w, options_.padding_constant);
  const int canvas_h = round_up_multiple(max_h, options_.padding_constant);
  const int label_w = canvas_w / rate, label_h = canvas_h / rate;

  out.images = new_batch_tensor({b, canvas_h, canvas_w, 3}, DType::f32);
  out.labels = new_batch_tensor({b, label_h, label_w}, DType::i32);
  float* images = out.images.data<float>();
  int32_t* labels = out.labels.data<int32_t>();
  std::fill(images, images + out.images.numel(), 0.0f);  // 0 after normalisation = the mean colour
  std::fill(labels, labels + out.labels.numel(), -1);    // ignore (DESIGN decision 12)

  // 3. Per sample: flip, resize, downsample the label, normalise, paste top-left.
  const Normalizer& normalizer = imagenet_normalizer();
  for (int j = 0; j < b; ++j) {
    LoadedSample& s = loaded[j];
    if (plan.flips[j]) {
      flip_horizontal(s.image);
      flip_horizontal(s.label);
    }
    const ScaledSize size = out.sizes[j];
    const Image image = resize_bilinear(s.image, size.width, size.height);
    const Image label = downsampled_label(resize_nearest(s.label, size.width, size.height), rate);
    normalizer.apply(image, images + static_cast<int64_t>(j) * canvas_h * canvas_w * 3, canvas_w * 3);
    int32_t* dst = labels + static_cast<int64_t>(j) * label_h * label_w;
    for (int y = 0; y < label.height; ++y)
      for (int x = 0; x < label.width; ++x) dst[y * label_w + x] = static_cast<int32_t>(label.at(x, y)) - 1;
  }
  return out;
}

}  // namespace seg::data
