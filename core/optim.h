// Optimizers and learning-rate schedules.
//
// Upstream trains with two torch.optim.SGD instances (encoder, decoder), each with two parameter
// groups: conv/linear weights with weight decay, everything else (biases, BatchNorm) without
// (mit_semseg's group_weight). The learning rate follows the poly schedule set before each step:
//   lr = base_lr * (1 - iter / max_iters) ^ power.
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
  SGD(std::vector<ParamGroup> groups, double lr, double momentum);

  void step();       // parameters without a gradient are skipped (like PyTorch)
  void zero_grad();  // drops all gradients
  void set_lr(double lr) { lr_ = lr; }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // Momentum buffers, one per parameter in group order (undefined until that parameter's first step).
  std::vector<Tensor>& momentum_buffers() { return buffers_; }

 private:
  std::vector<ParamGroup> groups_;
  std::vector<Tensor> buffers_;
  double lr_;
  double momentum_;
};

// Upstream's poly schedule: base * (1 - iter/max_iters)^power, for iter in [0, max_iters).
double poly_lr(double base_lr, long iter, long max_iters, double power);

}  // namespace seg
