#include "core/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace seg {

LossScaler::LossScaler(const LossScalerOptions& opt) : opt_(opt), scale_(std::min(opt.init_scale, opt.max_scale)) {
  SEG_CHECK(opt.init_scale > 0 && std::isfinite(opt.init_scale), usage, "loss scale must be positive and finite, got ",
            opt.init_scale);
}

std::string LossScaler::update(bool found_inf) {
  if (!opt_.enabled) return found_inf ? "Gradient overflow with loss scaling off: step skipped" : "";
  if (found_inf) {
    ++skipped_total_;
    clean_steps_ = 0;
    if (opt_.dynamic) scale_ = std::max(opt_.min_scale, scale_ * opt_.backoff_factor);
    return opt_.dynamic ? "Gradient overflow. Skipping step, loss scale reduced to " + format_scale(scale_)
                        : "Gradient overflow. Skipping step (static loss scale " + format_scale(scale_) + ")";
  }
  ++clean_steps_;
  if (opt_.dynamic && clean_steps_ >= opt_.growth_interval) {
    scale_ = std::min(opt_.max_scale, scale_ * opt_.growth_factor);
    clean_steps_ = 0;
  }
  return "";
}

void LossScaler::load_state(const State& s) {
  SEG_CHECK(s.scale > 0 && std::isfinite(s.scale), data, "checkpoint holds an invalid loss scale ", s.scale);
  scale_ = s.scale;
  clean_steps_ = s.clean_steps;
  skipped_total_ = s.skipped_total;
}

std::string format_scale(double scale) {
  char buf[64];
  if (scale == std::floor(scale) && scale < 1e15) std::snprintf(buf, sizeof buf, "%.0f", scale);
  else std::snprintf(buf, sizeof buf, "%g", scale);
  return buf;
}

}  // namespace seg
