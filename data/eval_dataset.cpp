#include "data/eval_dataset.h"

#include <algorithm>

#include "core/error.h"
#include "data/batch_memory.h"
#include "data/image_codec.h"
#include "data/resize.h"
#include "data/sample.h"
#include "data/transforms.h"

namespace seg::data {

namespace {

constexpr size_t kKeptBadSamples = 20;

OdgtList read_val_list(const DatasetOptions& options) {
  options.validate();
  OdgtReadOptions read;
  read.root = options.root_dataset;
  read.require_segm = true;
  read.max_sample = options.max_sample;
  read.start_idx = options.start_idx;
  read.end_idx = options.end_idx;
  return read_odgt(options.list_val, read);
}

OdgtList list_of_paths(const std::vector<std::string>& paths) {
  OdgtList list;
  for (size_t i = 0; i < paths.size(); ++i) {
    OdgtRecord r;
    r.fpath_img = paths[i];
    r.line = static_cast<int>(i + 1);
    list.records.push_back(r);
  }
  return list;
}

OdgtList read_test_list(const std::string& path) {
  OdgtReadOptions read;  // no root: test paths are used as given
  read.require_segm = false;
  OdgtList list = read_odgt(path, read);
  for (OdgtRecord& r : list.records) r.fpath_segm.clear();
  return list;
}

}  // namespace

EvalDataset::EvalDataset(const DatasetOptions& options, OdgtList list, bool with_labels)
    : options_(options), list_(std::move(list)), with_labels_(with_labels) {
  options_.validate();
}

EvalSample EvalDataset::get(int64_t index) const {
  SEG_ASSERT(index >= 0 && index < size());
  const OdgtRecord& record = list_[static_cast<size_t>(index)];
  EvalSample out;
  out.index = index;
  out.info = record.fpath_img;

  Image image;
  if (with_labels_) {
    LoadedSample s = load_sample(record, list_.path, options_.num_class, /*check_list_size=*/false);
    image = std::move(s.image);
    out.seg_label = new_batch_tensor({1, s.label.height, s.label.width}, DType::i32);
    int32_t* dst = out.seg_label.data<int32_t>();
    for (size_t i = 0; i < s.label.pixels.size(); ++i) dst[i] = static_cast<int32_t>(s.label.pixels[i]) - 1;
  } else {
    try {
      image = load_image_rgb(record.fpath_img);
    } catch (Error& e) {
      throw add_list_context(e, list_.path, record.line);
    }
  }

  out.img_ori = image_to_tensor(image);
  const Normalizer& normalizer = imagenet_normalizer();
  for (int short_side : options_.imgSizes) {
    const ScaledSize size =
        eval_scaled_size(image.width, image.height, short_side, options_.imgMaxSize, options_.padding_constant);
    const Image resized = resize_bilinear(image, size.width, size.height);
    Tensor t = new_batch_tensor({1, size.height, size.width, 3}, DType::f32);
    normalizer.apply(resized, t.data<float>(), static_cast<int64_t>(size.width) * 3);
    out.img_data.push_back(std::move(t));
  }
  return out;
}

ValDataset::ValDataset(const DatasetOptions& options) : ValDataset(options, read_val_list(options)) {}

ValDataset::ValDataset(const DatasetOptions& options, OdgtList list) : EvalDataset(options, std::move(list), true) {}

TestDataset::TestDataset(const DatasetOptions& options, const std::vector<std::string>& image_paths)
    : EvalDataset(options, list_of_paths(image_paths), false) {}

TestDataset::TestDataset(const DatasetOptions& options, const std::string& odgt_path)
    : EvalDataset(options, read_test_list(odgt_path), false) {}

EvalLoader::EvalLoader(const EvalDataset& dataset) : EvalLoader(dataset, 0, 1, -1) {}

EvalLoader::EvalLoader(const EvalDataset& dataset, int64_t first, int64_t stride, int64_t limit)
    : dataset_(dataset), next_submit_(first), stride_(stride) {
  SEG_CHECK(first >= 0 && stride >= 1, runtime, "EvalLoader: entries ", first, " + k * ", stride);
  end_ = limit >= 0 ? std::min(limit, dataset.size()) : dataset.size();
  remaining_ = first < end_ ? (end_ - first + stride - 1) / stride : 0;
  const DatasetOptions& o = dataset.options();
  prefetch_ = o.prefetch_depth();
  const bool skip = o.on_bad_sample == BadSamplePolicy::skip;
  workers_ = std::make_unique<OrderedWorkers<int64_t, Item>>(o.workers, [this, skip](const int64_t& index) {
    Item item;
    try {
      item.sample = dataset_.get(index);
    } catch (const Error& e) {
      if (!skip || e.kind() != ErrorKind::data) throw;
      item.bad = {index, e.what()};
    }
    return item;
  });
}

EvalLoader::~EvalLoader() = default;

std::optional<EvalSample> EvalLoader::next() {
  while (remaining_ > 0) {
    while (next_submit_ < end_ && workers_->pending() < prefetch_) {
      workers_->submit(next_submit_);
      next_submit_ += stride_;
    }
    double waited = 0.0;
    Item item = workers_->take(&waited);
    wait_seconds_ += waited;
    --remaining_;
    if (item.sample) return std::move(item.sample);
    ++skipped_;
    if (first_skipped_.size() < kKeptBadSamples) first_skipped_.push_back(item.bad);
  }
  return std::nullopt;
}

}  // namespace seg::data
