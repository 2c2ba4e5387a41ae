#include "data/loader_bench.h"

#include <chrono>
#include <thread>

#include "core/error.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/odgt.h"
#include "data/resize.h"
#include "data/synth_scene.h"
#include "data/train_loader.h"
#include "data/transforms.h"

namespace seg::data {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Writes `count` synthetic scenes at the sizes of the ADE list (cycling through it) and returns the
// benchmark list's path.
std::string write_benchmark_dataset(const LoaderBenchOptions& o, int64_t* written) {
  SEG_CHECK(!o.work_dir.empty(), usage, "the loader benchmark needs a work directory to write its images");
  const OdgtList sizes = read_odgt(o.ade_sizes_list, OdgtReadOptions{});
  SEG_CHECK(sizes.size() > 0, data, "no sizes in ", o.ade_sizes_list);
  std::string lines;
  std::vector<std::thread> threads;
  const int n_threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> line_of(o.images);
  for (int t = 0; t < n_threads; ++t)
    threads.emplace_back([&, t] {
      for (int i = t; i < o.images; i += n_threads) {
        const OdgtRecord& r = sizes[static_cast<size_t>(i) % sizes.size()];
        const synth::Scene s = synth::render_scene(7, static_cast<uint64_t>(i), r.width, r.height);
        const std::string name = str("bench_", i);
        save_jpeg(join_path(o.work_dir, "images/" + name + ".jpg"), s.image, 90);
        save_png(join_path(o.work_dir, "annotations/" + name + ".png"), s.label);
        line_of[i] = odgt_line("images/" + name + ".jpg", "annotations/" + name + ".png", r.width, r.height);
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& l : line_of) lines += l + "\n";
  const std::string list = join_path(o.work_dir, "bench.odgt");
  write_file_atomic(list, lines);
  *written = o.images;
  return list;
}

template <class F>
double time_ms(F&& f) {
  const auto t0 = Clock::now();
  f();
  return 1000.0 * seconds_since(t0);
}

StageTimes measure_stages(const OdgtList& list, const DatasetOptions& d, double* mean_megapixels) {
  StageTimes t;
  const size_t n = std::min<size_t>(50, list.size());
  double mp = 0;
  for (size_t i = 0; i < n; ++i) {
    const OdgtRecord& r = list[i];
    Image image, label;
    t.decode_jpeg += time_ms([&] { image = load_image_rgb(r.fpath_img); });
    t.decode_label += time_ms([&] { label = load_label(r.fpath_segm); });
    mp += image.width * double(image.height) / 1e6;
    // the middle training size (upstream's imgSizes cycle through 300..600)
    const int short_side = d.imgSizes[d.imgSizes.size() / 2];
    const ScaledSize s = train_scaled_size(image.width, image.height, short_side, d.imgMaxSize);
    Image resized;
    t.resize_image += time_ms([&] { resized = resize_bilinear(image, s.width, s.height); });
    t.resize_label += time_ms([&] { resize_nearest(label, s.width, s.height); });
    std::vector<float> out(static_cast<size_t>(resized.width) * resized.height * 3);
    t.normalise += time_ms([&] { imagenet_normalizer().apply(resized, out.data(), resized.width * 3); });
  }
  for (double* v : {&t.decode_jpeg, &t.decode_label, &t.resize_image, &t.resize_label, &t.normalise}) *v /= double(n);
  *mean_megapixels = mp / double(n);
  return t;
}

}  // namespace

LoaderBenchResult run_loader_benchmark(const LoaderBenchOptions& o) {
  LoaderBenchResult result;
  DatasetOptions d = o.dataset;
  std::string list_path = o.list;
  d.root_dataset = o.root;
  if (list_path.empty()) {
    const auto t0 = Clock::now();
    list_path = write_benchmark_dataset(o, &result.generated);
    d.root_dataset = o.work_dir;
    result.generate_seconds = seconds_since(t0);
  }
  d.list_train = list_path;
  d.num_class = 255;  // the benchmark lists come from any dataset; range checks still run
  const TrainDataset dataset(d);

  OdgtReadOptions read;
  read.root = d.root_dataset;
  result.stages = measure_stages(read_odgt(list_path, read), d, &result.mean_megapixels);

  TrainLoader loader(dataset);
  for (int i = 0; i < o.warmup; ++i) loader.next();  // fill the prefetch queue
  const double wait_before = loader.stats().wait_seconds;
  const auto t0 = Clock::now();
  for (int i = 0; i < o.iterations; ++i) result.images += loader.next().images();
  result.seconds = seconds_since(t0);
  result.workers = loader.workers();
  result.images_per_second = double(result.images) / result.seconds;
  result.images_per_second_per_worker = result.images_per_second / std::max(1, result.workers);
  result.wait_share = (loader.stats().wait_seconds - wait_before) / result.seconds;
  return result;
}

}  // namespace seg::data
