// Throughput of the training input pipeline at upstream's training sizes, for the loader benchmark
// (build/bin/bench_loader; later `segtrain bench`). Timing lives here, never in tests.
//
// Without a list, it writes a benchmark dataset first: synthetic scenes rendered at the sizes of
// the real ADE20K validation list (data/ade20k/validation.odgt), saved as JPEG q90 + PNG labels like
// ADE's files, so decode and resize costs match ADE's image sizes.
#pragma once

#include <cstdint>
#include <string>

#include "data/options.h"

namespace seg::data {

struct LoaderBenchOptions {
  std::string list;            // an existing odgt list; empty = generate the benchmark dataset
  std::string root;            // its root_dataset
  std::string work_dir;        // where to generate (required when list is empty)
  std::string ade_sizes_list;  // odgt whose width/height the generated images take
  int images = 200;            // generated images
  int iterations = 100;        // loader iterations to time (after `warmup`)
  int warmup = 5;
  DatasetOptions dataset;      // upstream defaults: imgSizes 300..600, imgMaxSize 1000, padding 8, rate 8
};

struct StageTimes {             // milliseconds per image, one thread
  double decode_jpeg = 0, decode_label = 0, resize_image = 0, resize_label = 0, normalise = 0;
  double total() const { return decode_jpeg + decode_label + resize_image + resize_label + normalise; }
};

struct LoaderBenchResult {
  int workers = 0;
  int64_t images = 0;          // timed images
  double seconds = 0;
  double images_per_second = 0;
  double images_per_second_per_worker = 0;
  double wait_share = 0;       // share of the timed span the consumer spent waiting (1 with no compute)
  double mean_megapixels = 0;  // decoded source image size
  StageTimes stages;           // single-thread breakdown on the first 50 images
  double generate_seconds = 0; // time to write the benchmark dataset (0 when a list was given)
  int64_t generated = 0;
};

LoaderBenchResult run_loader_benchmark(const LoaderBenchOptions& options);

}  // namespace seg::data
