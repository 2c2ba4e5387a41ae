#include "tools/profile_steps.h"

#include "core/error.h"
#include "core/numbers.h"

namespace seg::cli {

StepRange parse_profile_steps(const std::string& text) {
  const char* flag = "--profile-steps";
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::usage, str(flag, ": '", text, "' ", why))
        .key(flag)
        .hint("give the first and last training step to capture, counted from 1: --profile-steps 10-12 (or 10)");
  };
  const size_t dash = text.find('-');
  const std::string a = text.substr(0, dash), b = dash == std::string::npos ? a : text.substr(dash + 1);
  auto digits = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  const std::optional<int64_t> first = parse_int64(a), last = parse_int64(b);
  if (!digits(a) || !digits(b) || !first || !last) throw bad("is not a step range (expected A-B or N, whole numbers)");
  if (*first < 1) throw bad("starts before step 1 (steps are counted from 1)");
  if (*last < *first) throw bad("ends before it starts");
  return StepRange{*first, *last};
}

ProfileSteps::ProfileSteps(std::optional<StepRange> range, Device device, std::function<void(const std::string&)> say)
    : range_(range), device_(device), say_(std::move(say)) {
  if (!range_) return;
  if (device_.is_cpu()) {
    say_(flag_text() + ": ignored on the CPU: it brackets steps with cudaProfilerStart/Stop for Nsight Systems or "
                       "Nsight Compute, which profile CUDA devices");
    return;
  }
  active_ = true;
}

ProfileSteps::~ProfileSteps() {
  if (!open_) return;
  try {
    cuda_profiler_stop(device_);
  } catch (...) {
    // Leaving through an exception already: the first error is the one to report.
  }
}

std::string ProfileSteps::flag_text() const {
  return "--profile-steps " + std::to_string(range_->first) + "-" + std::to_string(range_->last);
}

void ProfileSteps::begin_step(int64_t step) {
  if (!active_ || open_ || done_ || step < range_->first || step > range_->last) return;
  cuda_profiler_start(device_);
  open_ = true;
  opened_at_ = step;
  say_(flag_text() + ": cudaProfilerStart before step " + std::to_string(step) +
       (step > range_->first ? " (the first step of the range this run reaches)" : ""));
}

void ProfileSteps::end_step(int64_t step) {
  if (!open_ || step < range_->last) return;
  cuda_profiler_stop(device_);
  open_ = false;
  done_ = true;
  say_(flag_text() + ": cudaProfilerStop after step " + std::to_string(step));
}

void ProfileSteps::finish(int64_t first_step, int64_t last_step) {
  if (!active_ || done_) return;
  done_ = true;
  if (open_) {
    cuda_profiler_stop(device_);
    open_ = false;
    say_(flag_text() + ": cudaProfilerStop after step " + std::to_string(last_step) +
         ", the last step of this run (steps " + std::to_string(opened_at_) + "-" + std::to_string(last_step) +
         " captured)");
    return;
  }
  say_(flag_text() + ": no step of the range ran (" +
       (last_step >= first_step && first_step > 0
            ? "this run ran steps " + std::to_string(first_step) + "-" + std::to_string(last_step)
            : std::string("this run ran no step")) +
       "): nothing was captured");
}

}  // namespace seg::cli
