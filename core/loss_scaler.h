// Loss scaling: why and how (DESIGN decision 7, Apex's LossScaler, torch's GradScaler).
//
// fp16 represents magnitudes from 2^-24 (smallest subnormal) to 65504. Many activation gradients of
// a segmentation net are far below 2^-24 and would flush to zero in fp16. Multiplying the loss by
// S before backward multiplies every gradient by S (the chain rule is linear), lifting them into
// range; the optimizer then divides by S before the update ("unscale"). If S is too large some
// gradient overflows to inf: the step is skipped and S is halved.
//
// Dynamic schedule (Apex defaults): S starts at 2^16; on overflow S = S*0.5 and the step is skipped;
// after 2000 consecutive clean steps S = min(S*2, 2^24). A static scale never changes.
// bf16 has fp32's exponent range, so it needs no scaling (off by default, on when asked).
#pragma once

#include <cstdint>
#include <string>

namespace seg {

struct LossScalerOptions {
  bool enabled = false;       // false: scale 1, nothing checked (O0, bf16 by default)
  bool dynamic = true;        // false: a static scale
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  double max_scale = 16777216.0;  // 2^24
  double min_scale = 0.0;         // no floor, as Apex
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerOptions& opt = {});

  bool enabled() const { return opt_.enabled; }
  double scale() const { return opt_.enabled ? scale_ : 1.0; }
  double inv_scale() const { return 1.0 / scale(); }

  // Records the outcome of one step. Returns "" for a clean step, or Apex's message for a skipped
  // one: "Gradient overflow. Skipping step, loss scale reduced to 32768".
  std::string update(bool found_inf);

  int64_t clean_steps() const { return clean_steps_; }    // since the last change of scale
  int64_t skipped_steps() const { return skipped_total_; }

  // State for checkpoints: the scale and the clean-step counter are all a resume needs.
  struct State {
    double scale;
    int64_t clean_steps;
    int64_t skipped_total;
  };
  State state() const { return {scale_, clean_steps_, skipped_total_}; }
  void load_state(const State& s);
  const LossScalerOptions& options() const { return opt_; }

 private:
  LossScalerOptions opt_;
  double scale_;
  int64_t clean_steps_ = 0;
  int64_t skipped_total_ = 0;
};

// "32768" for whole numbers, else a short decimal: how scales appear in logs.
std::string format_scale(double scale);

}  // namespace seg
