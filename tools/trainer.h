// The training loop of `segtrain train`: upstream's train.py (spec section 5) plus what it lacks:
// mixed precision, gradient accumulation, exact resume, Ctrl-C safety, validation during training,
// history and plots.
//
// Per iteration (upstream order): zero grads, set the poly learning rate for both optimizers,
// forward (encoder + decoder + loss), backward, step. With TRAIN.accum_steps = k each optimizer step
// averages k batches (the loss of each is divided by k), so one device reproduces upstream's
// multi-GPU batch; the learning-rate schedule counts optimizer steps, as upstream counts iterations.
//
// Files in DIR: config.json (the merged config plus derived values), encoder_epoch_N.safetensors and
// decoder_epoch_N.safetensors after each epoch (upstream's names), train_state.safetensors (model,
// optimizer momentum, fp32 master weights, loss scale, iteration, RNG: what --resume needs for an
// identical continuation; tools/train_state.h), history.csv/json/svg, and encoder_best/decoder_best
// when validating. The files of one save form a checkpoint set that the train state, written last,
// commits (tools/checkpoint_set.h): a crash or a full disk never leaves a state that names files it
// did not finish.
//
// Before the first step every list entry's files are checked from their headers (tools/preflight.h).
// --resume refuses a config that changes the run (tools/resume_check.h); a finished run resumed
// trains nothing and keeps its state, and one resumed with a larger TRAIN.num_epoch continues at
// the saved step on the longer schedule.
#pragma once

#include <optional>
#include <string>

#include "tools/config.h"
#include "tools/evaluate.h"
#include "tools/profile_steps.h"
#include "tools/run_setup.h"

namespace seg::cli {

struct TrainRunOptions {
  bool resume = false;       // continue exactly from DIR/train_state.safetensors
  bool force = false;        // resume even when the config changes the run (tools/resume_check.h), warning per key
  bool amp_stats = false;    // print fp16 underflow/overflow shares of the gradients per layer
  bool detect_anomaly = false;  // --detect-anomaly (or TRAIN.detect_anomaly): layers/anomaly.h
  int64_t stop_after = 0;    // stop (as if interrupted, resumable) after this many steps; tests and --smoke
  bool quiet = false;        // no per-interval log lines (the demo prints its own)
  std::optional<StepRange> profile_steps;  // --profile-steps A-B: cudaProfilerStart/Stop around those steps
};

struct TrainSummary {
  int64_t steps = 0;            // the step the run is at now: optimizer steps completed in total (resume included)
  int64_t start_step = 0;       // the step this invocation started at (the saved one on --resume)
  int64_t steps_this_run = 0;   // optimizer steps this invocation ran
  int64_t max_steps = 0;        // TRAIN.epoch_iters * TRAIN.num_epoch
  int64_t skipped_steps = 0;    // overflowing steps skipped by the loss scaler
  int64_t anomalies = 0;        // --detect-anomaly: skipped steps whose first inf/NaN gradient was named
  double first_loss = 0, last_loss = 0;  // mean loss of the first and of the last log interval
  double last_accuracy = 0;
  double seconds = 0;
  bool interrupted = false;     // stopped by a signal or stop_after (a resumable state was saved)
  std::optional<EvalResult> last_eval;
  double best_miou = -1;
};

TrainSummary run_training(const Config& cfg, const CommonFlags& flags, const TrainRunOptions& opt);

// The train-state file of DIR.
std::string train_state_path(const std::string& dir);

}  // namespace seg::cli
