// One optimization step under mixed precision, in two calls (so gradient accumulation can run
// several backward passes between them):
//
//   scaled_backward(loss, scaler, accum)   backward with the gradient seed S/accum instead of 1:
//                                          every gradient comes out multiplied by the loss scale S
//   unscale_and_step(scaler, optimizers)   one fused unscale + inf/NaN check per optimizer; if any
//                                          gradient anywhere overflowed, no optimizer steps, the
//                                          scale is backed off and the outcome says so; else all step
//
// On a GPU the found-inf flag is a device int the unscale kernels OR into; deciding whether to step
// needs it on the host: that is the step's one read-back. Pass the step's other results (loss,
// accuracy counts) in `readback` and they travel in the same copy (core/readback.h).
//
// Both optimizers of upstream's training (encoder, decoder) share the scaler and skip together.
#pragma once

#include <string>
#include <vector>

#include "core/comm.h"
#include "core/loss_scaler.h"
#include "core/optim.h"
#include "core/readback.h"
#include "core/tensor.h"

namespace seg {

void scaled_backward(const Tensor& loss, const LossScaler& scaler, int accum_steps = 1);

struct StepOutcome {
  bool stepped = true;
  double scale_used = 1.0;  // the scale the gradients were computed with
  std::string message;      // Apex-style overflow message when skipped
};
// With a communicator of several ranks the found-inf flag is all-reduced (max) before the decision,
// so every rank skips the same steps and the loss scale stays equal on all ranks.
StepOutcome unscale_and_step(LossScaler& scaler, const std::vector<SGD*>& optimizers, ReadBack* readback = nullptr,
                             Communicator* comm = nullptr);

}  // namespace seg
