#include "core/amp_step.h"

#include "core/autograd.h"

namespace seg {

void scaled_backward(const Tensor& loss, const LossScaler& scaler, int accum_steps) {
  SEG_CHECK(loss.numel() == 1, runtime, "scaled_backward needs a scalar loss, got ", loss.str());
  SEG_CHECK(accum_steps >= 1, usage, "TRAIN.accum_steps must be >= 1, got ", accum_steps);
  loss.backward(Tensor::full(loss.shape(), scaler.scale() / accum_steps, loss.dtype(), loss.device()));
}

StepOutcome unscale_and_step(LossScaler& scaler, const std::vector<SGD*>& optimizers) {
  StepOutcome out;
  out.scale_used = scaler.scale();
  bool found_inf = false;
  if (scaler.enabled()) {
    for (SGD* opt : optimizers) found_inf |= opt->unscale_grads(scaler.inv_scale());
  }
  if (!found_inf)
    for (SGD* opt : optimizers) opt->step();
  out.stepped = !found_inf;
  out.message = scaler.update(found_inf);
  return out;
}

}  // namespace seg
