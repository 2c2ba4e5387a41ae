// The synthetic dataset generator: writes a complete dataset in ADE20K's format, ready for
// training and evaluation with root_dataset = out_dir:
//
//   out_dir/images/training/synth_train_00000001.jpg       RGB JPEG
//   out_dir/annotations/training/synth_train_00000001.png  8-bit labels, 0 = unlabeled, 1..10
//   out_dir/images/validation/..., out_dir/annotations/validation/...
//   out_dir/training.odgt, out_dir/validation.odgt          lists, paths relative to out_dir
//   out_dir/object10_info.csv, out_dir/color10.csv          class names and palette (ADE's formats;
//                                                           the number is num_class)
//   out_dir/synth.json                                      the options; written last = complete
//
// Its own num_class (10 by default, see data/synth_scene.h), never padded with unused ADE ids: mIoU
// averages over all classes. Image sizes vary (long side min_long_side..max_long_side, long/short aspect
// min_aspect..max_aspect), a portrait_fraction of them portrait. Image i of a split is a pure
// function of (seed, split, i): the same options give the same files, whatever the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/synth_scene.h"

namespace seg::data {

struct SynthOptions {
  std::string out_dir = "data-gen/synth";
  int64_t num_train = 2000;
  int64_t num_val = 200;
  uint64_t seed = 1;
  int min_long_side = 160;
  int max_long_side = 256;
  double min_aspect = 1.1;  // long side / short side
  double max_aspect = 1.6;
  double portrait_fraction = 0.3;
  int jpeg_quality = 90;
  int threads = 0;  // 0 = hardware threads
  int num_class = 10;  // 6..10: the first classes of data/synth_scene.h (fewer object kinds = easier)

  void validate() const;  // Error(usage) naming the option
};

enum class SynthSplit : uint32_t { train = 0, val = 1 };

// Scene `index` of a split at its drawn size (what the generator writes, before JPEG compression).
synth::Scene render_synth_sample(const SynthOptions& options, SynthSplit split, int64_t index);

struct SynthReport {
  std::string out_dir;
  std::string list_train;   // out_dir/training.odgt
  std::string list_val;     // out_dir/validation.odgt
  std::string class_info;   // out_dir/object10_info.csv
  std::string palette;      // out_dir/color10.csv
  int num_class = 0;
  int64_t images = 0;       // train + val
  int64_t portrait = 0;
  double seconds = 0.0;
  std::vector<int64_t> train_pixels;  // per label value 0..num_class, over the training split
};

// Writes the dataset (every file atomically; the lists and synth.json only after all images).
// `progress(done, total)` is called from worker threads, serialised.
SynthReport generate_synthetic_dataset(const SynthOptions& options,
                                       const std::function<void(int64_t, int64_t)>& progress = {});

// True when out_dir holds a complete dataset generated with exactly these options (synth.json).
bool synthetic_dataset_complete(const SynthOptions& options);

}  // namespace seg::data
