// Training history: one row per log interval (TRAIN.disp_iter) and per evaluation, saved as CSV and
// JSON in the run folder and drawn as an SVG plot (loss, accuracy, learning rate; mIoU when
// validation runs), so a run can be read without any plotting tool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/fileio.h"

namespace seg::cli {

struct HistoryRow {
  int64_t iteration = 0;  // global iteration (1-based, like upstream's log)
  int64_t epoch = 0;
  double loss = 0;
  double accuracy = 0;    // training pixel accuracy, 0..1
  double lr_encoder = 0;
  double lr_decoder = 0;
  double images_per_second = 0;
  double data_wait_share = 0;  // fraction of the interval spent waiting for data
  double loss_scale = 1;
  int64_t peak_memory_bytes = 0;
};

struct EvalRow {
  int64_t epoch = 0;
  int64_t iteration = 0;
  double mean_iou = 0;
  double pixel_accuracy = 0;
};

class History {
 public:
  void add(const HistoryRow& row) { rows_.push_back(row); }
  void add_eval(const EvalRow& row) { evals_.push_back(row); }
  const std::vector<HistoryRow>& rows() const { return rows_; }
  const std::vector<EvalRow>& evals() const { return evals_; }

  // history.csv, history.json and history.svg in `dir` (atomic writes); returns history.json's
  // digest (the file --resume reads, recorded in the checkpoint set).
  FileDigest save(const std::string& dir) const;
  // Reloads history.json (for --resume); a missing file leaves the history empty.
  void load(const std::string& dir);
  // Keeps only rows up to `iteration` (a resumed run replays nothing twice).
  void truncate(int64_t iteration);

 private:
  std::vector<HistoryRow> rows_;
  std::vector<EvalRow> evals_;
};

// The SVG plot alone (used by save and by tests): three stacked panels sharing the iteration axis.
std::string history_svg(const History& h);

}  // namespace seg::cli
