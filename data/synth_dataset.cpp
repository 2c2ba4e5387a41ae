#include "data/synth_dataset.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/rng.h"
#include "data/class_info.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/odgt.h"

namespace seg::data {

namespace {

constexpr const char* kGeneratorVersion = "segtrain-synth-1";

// Philox stream ids: the scene and its size use separate streams of the data_synth purpose.
uint64_t scene_stream(SynthSplit split, int64_t index) {
  return (static_cast<uint64_t>(split) << 40) | static_cast<uint64_t>(index);
}
uint64_t size_stream(SynthSplit split, int64_t index) { return scene_stream(split, index) | (1ull << 39); }

const char* split_dir(SynthSplit split) { return split == SynthSplit::train ? "training" : "validation"; }
const char* split_prefix(SynthSplit split) { return split == SynthSplit::train ? "synth_train" : "synth_val"; }

std::string sample_name(SynthSplit split, int64_t index) {
  char name[64];
  std::snprintf(name, sizeof name, "%s_%08lld", split_prefix(split), static_cast<long long>(index + 1));
  return name;
}

nlohmann::json manifest_of(const SynthOptions& o) {
  return {{"generator", kGeneratorVersion}, {"num_class", o.num_class},
          {"seed", o.seed},                 {"num_train", o.num_train},
          {"num_val", o.num_val},           {"min_long_side", o.min_long_side},
          {"max_long_side", o.max_long_side}, {"min_aspect", o.min_aspect},
          {"max_aspect", o.max_aspect},     {"portrait_fraction", o.portrait_fraction},
          {"jpeg_quality", o.jpeg_quality}};
}

// Per-image statistics, summed after all threads finish (so the totals never depend on timing).
struct ImageStats {
  std::vector<int64_t> pixels;  // per label value
  int width = 0;
  int height = 0;
};

}  // namespace

void SynthOptions::validate() const {
  auto bad = [](const char* option, const std::string& why) {
    return Error(ErrorKind::usage, str(option, " ", why)).key(option);
  };
  if (out_dir.empty()) throw bad("--out", "must name a directory");
  if (num_train < 1 || num_val < 0) throw bad("--train/--val", "need at least 1 training image and 0 or more val images");
  if (num_train > 100000000 || num_val > 100000000) throw bad("--train/--val", "are limited to 100 million images");
  if (min_long_side < 16 || max_long_side < min_long_side || max_long_side > 8192)
    throw bad("--size", str("must be MIN-MAX with 16 <= MIN <= MAX <= 8192, got ", min_long_side, "-", max_long_side));
  if (!(min_aspect >= 1.0 && max_aspect >= min_aspect && max_aspect <= 4.0))
    throw bad("--aspect", "must satisfy 1 <= MIN <= MAX <= 4 (long side / short side)");
  if (!(portrait_fraction >= 0.0 && portrait_fraction <= 1.0)) throw bad("--portrait", "must be within 0..1");
  if (jpeg_quality < 1 || jpeg_quality > 100) throw bad("--quality", "must be 1..100");
  if (threads < 0) throw bad("--threads", "must be 0 (all) or more");
  if (num_class < synth::kMinSynthClasses || num_class > synth::synth_num_class())
    throw bad("--classes", str("must be ", synth::kMinSynthClasses, "..", synth::synth_num_class(), ", got ", num_class));
}

synth::Scene render_synth_sample(const SynthOptions& o, SynthSplit split, int64_t index) {
  PhiloxStream rng(o.seed, RngPurpose::data_synth, size_stream(split, index));
  const int long_side = o.min_long_side + static_cast<int>(rng.below(static_cast<uint32_t>(o.max_long_side - o.min_long_side + 1)));
  const double aspect = o.min_aspect + (o.max_aspect - o.min_aspect) * rng.uniform_f64();
  const int short_side = std::max(8, static_cast<int>(long_side / aspect + 0.5));
  const bool portrait = rng.uniform_f64() < o.portrait_fraction;
  const int width = portrait ? short_side : long_side;
  const int height = portrait ? long_side : short_side;
  return synth::render_scene(o.seed, scene_stream(split, index), width, height, o.num_class);
}

SynthReport generate_synthetic_dataset(const SynthOptions& o, const std::function<void(int64_t, int64_t)>& progress) {
  o.validate();
  const auto t0 = std::chrono::steady_clock::now();
  const int num_class = o.num_class;
  const std::string root = o.out_dir;
  const std::string manifest_path = join_path(root, "synth.json");
  std::filesystem::remove(manifest_path);  // an interrupted run must not look complete

  const int64_t total = o.num_train + o.num_val;
  std::vector<ImageStats> stats(static_cast<size_t>(total));
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex progress_mutex;
  std::exception_ptr error;
  std::mutex error_mutex;

  auto work = [&] {
    for (;;) {
      const int64_t k = next.fetch_add(1);
      if (k >= total) return;
      try {
        const SynthSplit split = k < o.num_train ? SynthSplit::train : SynthSplit::val;
        const int64_t index = split == SynthSplit::train ? k : k - o.num_train;
        const synth::Scene scene = render_synth_sample(o, split, index);
        const std::string name = sample_name(split, index);
        save_jpeg(join_path(root, str("images/", split_dir(split), "/", name, ".jpg")), scene.image, o.jpeg_quality);
        save_png(join_path(root, str("annotations/", split_dir(split), "/", name, ".png")), scene.label);
        ImageStats& s = stats[static_cast<size_t>(k)];
        s.pixels.assign(num_class + 1, 0);
        for (uint8_t v : scene.label.pixels) ++s.pixels[v];
        s.width = scene.image.width;
        s.height = scene.image.height;
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(total);  // stop the other threads soon
        return;
      }
      const int64_t finished = done.fetch_add(1) + 1;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        progress(finished, total);
      }
    }
  };
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);

  // Lists, class table and palette: only now that every image exists.
  SynthReport report;
  report.out_dir = root;
  report.num_class = num_class;
  report.images = total;
  report.train_pixels.assign(num_class + 1, 0);
  std::vector<ClassInfo> classes(num_class);
  std::string lists[2];
  int64_t train_total_pixels = 0;
  for (int64_t k = 0; k < total; ++k) {
    const SynthSplit split = k < o.num_train ? SynthSplit::train : SynthSplit::val;
    const int64_t index = split == SynthSplit::train ? k : k - o.num_train;
    const ImageStats& s = stats[static_cast<size_t>(k)];
    report.portrait += s.height > s.width;
    const int64_t pixels = static_cast<int64_t>(s.width) * s.height;
    const std::string name = sample_name(split, index);
    lists[static_cast<int>(split)] += odgt_line(str("images/", split_dir(split), "/", name, ".jpg"),
                                                str("annotations/", split_dir(split), "/", name, ".png"), s.width, s.height) +
                                      "\n";
    for (int c = 1; c <= num_class; ++c) {
      if (s.pixels[c] == 0) continue;
      if (split == SynthSplit::train) ++classes[c - 1].train; else ++classes[c - 1].val;
    }
    if (split == SynthSplit::train) {
      for (int v = 0; v <= num_class; ++v) report.train_pixels[v] += s.pixels[v];
      train_total_pixels += pixels;
    }
  }
  std::vector<Rgb> palette;
  for (int c = 0; c < num_class; ++c) {
    const synth::SynthClass& sc = synth::synth_classes()[c];
    classes[c].idx = c + 1;
    classes[c].name = sc.name;
    classes[c].stuff = sc.stuff;
    classes[c].ratio = static_cast<double>(report.train_pixels[c + 1]) / static_cast<double>(train_total_pixels);
    palette.push_back(sc.colour);
  }
  report.list_train = join_path(root, "training.odgt");
  report.list_val = join_path(root, "validation.odgt");
  report.class_info = join_path(root, str("object", num_class, "_info.csv"));
  report.palette = join_path(root, str("color", num_class, ".csv"));
  write_file_atomic(report.list_train, lists[0]);
  write_file_atomic(report.list_val, lists[1]);
  write_file_atomic(report.class_info, format_class_info_csv(classes));
  write_file_atomic(report.palette, format_palette_csv(palette));
  write_file_atomic(manifest_path, manifest_of(o).dump(2) + "\n");
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

bool synthetic_dataset_complete(const SynthOptions& options) {
  const std::string path = join_path(options.out_dir, "synth.json");
  if (!file_exists(path)) return false;
  try {
    return nlohmann::json::parse(read_file_text(path, "manifest")) == manifest_of(options);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace seg::data
