#include "data/dataset_check.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "data/odgt.h"
#include "data/sample.h"

namespace seg::data {

namespace {

// What one entry contributes; filled by whichever thread checks it, summed in list order.
struct EntryResult {
  bool good = false;
  std::string problem;
  std::vector<int64_t> histogram;  // per label value (empty when bad)
  int width = 0, height = 0;
};

EntryResult check_entry(const OdgtRecord& r, const std::string& list, int num_class) {
  EntryResult out;
  try {
    // num_class 0: check everything else and accept any 8-bit value.
    const LoadedSample s = load_sample(r, list, num_class > 0 ? num_class : 255, r.width > 0 && r.height > 0);
    out.histogram.assign(256, 0);
    for (uint8_t v : s.label.pixels) ++out.histogram[v];
    out.width = s.image.width;
    out.height = s.image.height;
    out.good = true;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::data) throw;
    out.problem = e.what();
  }
  return out;
}

// Runs fn(i) for i in [0, n) on `threads` threads (the calling one included), handing out indices
// one at a time; the first exception stops the others and is rethrown.
void parallel_entries(int64_t n, int threads, const std::function<void(int64_t)>& fn) {
  std::atomic<int64_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto work = [&] {
    for (;;) {
      const int64_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(n);
        return;
      }
    }
  };
  const int count = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 1; t < count && t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

PreflightReport preflight_check(const OdgtList& list, bool check_list_size, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t n = static_cast<int64_t>(list.size());
  std::vector<std::string> problems(static_cast<size_t>(n));
  parallel_entries(n, threads, [&](int64_t i) {
    try {
      check_sample_files(list[static_cast<size_t>(i)], list.path, check_list_size);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::data) throw;
      problems[static_cast<size_t>(i)] = e.what();
    }
  });
  PreflightReport report;
  report.entries = n;
  for (int64_t i = 0; i < n; ++i)
    if (!problems[static_cast<size_t>(i)].empty())
      report.problems.push_back({list[static_cast<size_t>(i)].line, problems[static_cast<size_t>(i)]});
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

DatasetCheckReport check_dataset(const DatasetCheckOptions& options,
                                 const std::function<void(int64_t, int64_t)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  OdgtReadOptions read;
  read.root = options.root;
  read.require_segm = true;
  const OdgtList list = read_odgt(options.list, read);
  const int64_t n = static_cast<int64_t>(list.size());

  std::vector<EntryResult> results(static_cast<size_t>(n));
  std::atomic<int64_t> done{0};
  std::mutex progress_mutex;
  parallel_entries(n, options.threads, [&](int64_t i) {
    results[static_cast<size_t>(i)] = check_entry(list[static_cast<size_t>(i)], list.path, options.num_class);
    const int64_t finished = done.fetch_add(1) + 1;
    if (progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      progress(finished, n);
    }
  });

  DatasetCheckReport report;
  report.entries = n;
  report.pixels.assign(256, 0);
  report.images.assign(256, 0);
  for (int64_t i = 0; i < n; ++i) {
    const EntryResult& r = results[static_cast<size_t>(i)];
    if (!r.good) {
      report.problems.push_back({list[static_cast<size_t>(i)].line, r.problem});
      continue;
    }
    ++report.good;
    report.portrait += r.height > r.width;
    const int lo = std::min(r.width, r.height), hi = std::max(r.width, r.height);
    report.min_side = report.good == 1 ? lo : std::min(report.min_side, lo);
    report.max_side = std::max(report.max_side, hi);
    for (int v = 0; v < 256; ++v) {
      if (r.histogram[v] == 0) continue;
      report.pixels[v] += r.histogram[v];
      ++report.images[v];
      report.max_label = std::max(report.max_label, v);
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace seg::data
