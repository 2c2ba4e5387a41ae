// --profile-steps A-B (segtrain train and bench): opens a CUDA profiler's capture range before step
// A and closes it after step B, so that `nsys profile --capture-range=cudaProfilerApi` or
// `ncu --profile-from-start off` record only those steps, not start-up, warm-up and checkpoints.
//
// Steps are the optimizer steps of the whole run numbered from 1, as history.csv's iteration and
// train's closing summary count them (the log's "[epoch][i/N]" counts from 0 within an epoch; a
// resumed run goes on counting); A-B includes both ends, "N" means N-N. bench counts the steps it
// runs, warm-up included. Step A starts with its data (the loader wait
// and the batch's host-to-device copy) and step B ends when the device has finished its optimizer
// step: cuda_profiler_stop waits for the device (core/device.h). A run that stops inside the range
// (its end, --stop-after, Ctrl-C) closes it at its last step, and a range no step of the run falls
// in opens nothing; both are said in one line. On the CPU there is no CUDA profiler: the flag does
// nothing and says so (use segtrain bench for the CPU's per-op times).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/device.h"

namespace seg::cli {

struct StepRange {
  int64_t first = 1, last = 1;  // 1-based, inclusive
};
// "A-B" (1 <= A <= B) or "N"; Error(usage) naming --profile-steps and the text otherwise.
StepRange parse_profile_steps(const std::string& text);

class ProfileSteps {
 public:
  // No range: does nothing. `say` prints one line (the trainer's console; rank 0 only).
  ProfileSteps(std::optional<StepRange> range, Device device, std::function<void(const std::string&)> say);
  ~ProfileSteps();  // closes a range still open (an exception left the loop)
  ProfileSteps(const ProfileSteps&) = delete;
  ProfileSteps& operator=(const ProfileSteps&) = delete;

  // Around each step (1-based): begin opens the range at the first step of A-B this run reaches,
  // end closes it after step B.
  void begin_step(int64_t step);
  void end_step(int64_t step);
  // The run is over; it ran steps first_step..last_step (last_step < first_step: none). Closes a
  // range still open, or says that no step of A-B ran.
  void finish(int64_t first_step, int64_t last_step);

  bool capturing() const { return open_; }

 private:
  std::string flag_text() const;
  std::optional<StepRange> range_;
  Device device_;
  std::function<void(const std::string&)> say_;
  bool active_ = false;  // a range on a CUDA device
  bool open_ = false;    // between cudaProfilerStart and cudaProfilerStop
  bool done_ = false;    // closed, or finish() reported
  int64_t opened_at_ = 0;
};

}  // namespace seg::cli
