// Validating a dataset list before a long run: every file exists and decodes, image and label
// sizes match each other (and the list's width/height when given), labels are 8-bit single-channel
// with values in 0..num_class. Unlike training, which stops at the first bad sample, the check goes
// through the whole list and reports every problem, plus a class histogram.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/odgt.h"

namespace seg::data {

struct DatasetCheckOptions {
  std::string list;        // odgt file
  std::string root;        // DATASET.root_dataset ("" = paths as written)
  int num_class = 0;       // 0 = do not check the range (report the largest value)
  int threads = 0;         // 0 = hardware threads
};

struct DatasetProblem {
  int line = 0;            // in the list
  std::string message;     // the full data error (file, what to do)
};

struct DatasetCheckReport {
  int64_t entries = 0;
  int64_t good = 0;
  std::vector<DatasetProblem> problems;  // in list order
  std::vector<int64_t> pixels;           // per label value 0..255, over the good entries
  std::vector<int64_t> images;           // per label value: good entries that contain it
  int max_label = 0;
  int64_t portrait = 0;                  // good entries with height > width
  int min_side = 0, max_side = 0;        // over the good images
  double seconds = 0.0;
};

// Error(data) only when the list itself cannot be read or parsed; problems with samples go to the
// report. `progress(done, total)` is called from worker threads, serialised.
DatasetCheckReport check_dataset(const DatasetCheckOptions& options,
                                 const std::function<void(int64_t, int64_t)>& progress = {});

// The pre-flight check training runs before its first step: for every entry of a list already read,
// the header-only checks of check_sample_files (data/sample.h: files exist and parse, label format,
// image/label sizes, the list's width/height with `check_list_size`), on `threads` threads
// (0 = hardware threads). The messages are check_dataset's (and the loader's) for the same problem.
struct PreflightReport {
  int64_t entries = 0;
  std::vector<DatasetProblem> problems;  // in list order
  double seconds = 0.0;
};
PreflightReport preflight_check(const OdgtList& list, bool check_list_size, int threads = 0);

}  // namespace seg::data
