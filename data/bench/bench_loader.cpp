// bench_loader: training-loader throughput at upstream's training sizes, and the synthetic
// generator's speed. Prints a small report; see docs/data-pipeline.md for recorded numbers.
//
//   build/bin/bench_loader                          # 2 workers, generated ADE-sized dataset
//   build/bin/bench_loader --workers 1 --iterations 200
//   build/bin/bench_loader --list ./data/training.odgt --root ./data/   # a real dataset
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <unistd.h>

#include "core/error.h"
#include "core/numbers.h"
#include "data/loader_bench.h"
#include "data/synth_dataset.h"

using namespace seg;
using namespace seg::data;

namespace {

void usage() {
  std::printf(
      "usage: bench_loader [--workers N] [--iterations N] [--images N] [--batch N] [--list ODGT --root DIR]\n"
      "                    [--work-dir DIR] [--synth-images N]\n\n"
      "Times the training loader (upstream sizes: imgSizes 300..600, imgMaxSize 1000, padding 8, rate 8)\n"
      "with a consumer that does nothing, so the number is the loader's own throughput. Without --list\n"
      "it first writes --images synthetic JPEG/PNG pairs at the sizes of data/ade20k/validation.odgt.\n"
      "Then times the synthetic dataset generator (--synth-images images at its default 160-256 px).\n");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    LoaderBenchOptions o;
    o.dataset.workers = 2;
    o.ade_sizes_list = std::string(SEG_SOURCE_DIR) + "/data/ade20k/validation.odgt";
    int synth_images = 400;
    std::string work_dir;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) SEG_FAIL(usage, a, " needs a value");
        return argv[++i];
      };
      if (a == "-h" || a == "--help") {
        usage();
        return 0;
      } else if (a == "--workers") {
        o.dataset.workers = static_cast<int>(int_flag(a, value(), 0, 1 << 20));
      } else if (a == "--iterations") {
        o.iterations = static_cast<int>(int_flag(a, value(), 1, 1 << 20));
      } else if (a == "--images") {
        o.images = static_cast<int>(int_flag(a, value(), 1, 1 << 20));
      } else if (a == "--batch") {
        o.dataset.batch_size_per_gpu = static_cast<int>(int_flag(a, value(), 1, 1 << 20));
      } else if (a == "--list") {
        o.list = value();
      } else if (a == "--root") {
        o.root = value();
      } else if (a == "--work-dir") {
        work_dir = value();
      } else if (a == "--synth-images") {
        synth_images = static_cast<int>(int_flag(a, value(), 1, 1 << 20));
      } else {
        SEG_FAIL(usage, "unknown option ", a, " (see --help)");
      }
    }
    const bool own_dir = work_dir.empty();
    if (own_dir) work_dir = (std::filesystem::temp_directory_path() / ("segtrain_bench_loader_" + std::to_string(::getpid()))).string();
    o.work_dir = work_dir + "/loader";

    const LoaderBenchResult r = run_loader_benchmark(o);
    std::printf("loader benchmark (batch_size_per_gpu %d, imgSizes 300..600, imgMaxSize 1000, %d workers, %d hardware threads)\n",
                o.dataset.batch_size_per_gpu, r.workers, static_cast<int>(std::thread::hardware_concurrency()));
    if (r.generated) std::printf("  wrote %lld ADE-sized JPEG/PNG pairs in %.1f s\n", static_cast<long long>(r.generated), r.generate_seconds);
    std::printf("  source images: %.2f megapixels on average\n", r.mean_megapixels);
    std::printf("  one thread, ms per image: decode JPEG %.2f, decode label PNG %.2f, resize image %.2f, resize label %.2f, normalise %.2f (total %.2f -> %.1f images/s per core)\n",
                r.stages.decode_jpeg, r.stages.decode_label, r.stages.resize_image, r.stages.resize_label, r.stages.normalise,
                r.stages.total(), 1000.0 / r.stages.total());
    std::printf("  loader: %lld images in %.2f s = %.1f images/s (%.1f images/s per worker), consumer waiting %.0f%% of the time\n",
                static_cast<long long>(r.images), r.seconds, r.images_per_second, r.images_per_second_per_worker, 100.0 * r.wait_share);

    if (synth_images > 0) {
      SynthOptions s;
      s.out_dir = work_dir + "/synth";
      s.num_train = synth_images;
      s.num_val = 0;
      const SynthReport g = generate_synthetic_dataset(s);
      std::printf("synthetic generator: %lld images (%d-%d px, JPEG + PNG + lists) in %.2f s = %.0f images/s on %d threads\n",
                  static_cast<long long>(g.images), s.min_long_side, s.max_long_side, g.seconds, g.images / g.seconds,
                  static_cast<int>(std::thread::hardware_concurrency()));
    }
    if (own_dir) std::filesystem::remove_all(work_dir);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_loader: %s\n", e.what());
    return e.exit_code();
  }
}
