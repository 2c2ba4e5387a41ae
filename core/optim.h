// Optimizers and learning-rate schedules.
//
// Upstream trains with two torch.optim.SGD instances (encoder, decoder), each with two parameter
// groups: conv/linear weights with weight decay, everything else (biases, BatchNorm) without
// (mit_semseg's group_weight). The learning rate follows the poly schedule set before each step:
//   lr = base_lr * (1 - iter / max_iters) ^ power.
//
// Mixed precision (core/amp_policy.h) adds two things here:
//  * unscale_grads(inv_scale): one fused pass over every gradient that divides out the loss scale
//    and reports whether any value is inf/NaN (then the caller skips the step);
//  * fp32 master weights (O2): for a half parameter the optimizer keeps an fp32 copy, updates that
//    copy with fp32 gradients, and rewrites the half parameter from it in the same pass. Updates
//    smaller than half's resolution (lr*g << |w| * 2^-11) would otherwise be lost.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"

namespace seg {

struct ParamGroup {
  std::string name;           // for logs ("decay", "no_decay")
  std::vector<Tensor> params;
  double weight_decay = 0.0;
};

class SGD {
 public:
  SGD(std::vector<ParamGroup> groups, double lr, double momentum, bool master_weights = false);

  // Divides every gradient by the loss scale (into the fp32 master gradients of half parameters
  // when master weights are on, in place otherwise) and sets found_inf (one i32 on the parameters'
  // device) to 1 if any gradient is inf or NaN, never back to 0. Nothing is read back: on a GPU the
  // flag stays on the device until the step's one read-back (core/amp_step.h).
  void unscale_grads(double inv_scale, Tensor& found_inf);
  // The same with its own flag, read back: true if any gradient is inf or NaN.
  bool unscale_grads(double inv_scale);
  // The device of the parameters (the CPU without any).
  Device device() const;
  // Moves the optimizer state (momentum, master weights and gradients) to `device` in place; the
  // parameters themselves move with their Module (Module::to).
  void to(Device device);
  void step();       // parameters without a gradient are skipped (like PyTorch)
  void zero_grad();  // drops all gradients
  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  bool master_weights() const { return master_weights_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }

  // Per-parameter state, in group order (for checkpoints and tests).
  struct ParamState {
    Tensor momentum;     // same dtype as the update (f32 for master weights)
    Tensor master;       // fp32 copy of a half parameter (master weights only)
    Tensor master_grad;  // fp32 unscaled gradient of a half parameter (valid after unscale_grads)
    bool master_grad_ready = false;
  };
  std::vector<ParamState>& state() { return state_; }

 private:
  std::vector<ParamGroup> groups_;
  std::vector<ParamState> state_;
  double lr_;
  double momentum_;
  bool master_weights_;
};

// Upstream's poly schedule: base * (1 - iter/max_iters)^power, for iter in [0, max_iters).
double poly_lr(double base_lr, long iter, long max_iters, double power);

}  // namespace seg
