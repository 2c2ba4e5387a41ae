// O1 autocasting: while an Autocast guard is alive, ops cast their inputs by the policy table
// (core/amp_policy.h): conv to half, softmax/loss/reductions to fp32, add/concat/resize/pool to the
// widest input dtype. Casts are autograd ops (ops::cast), so gradients return to each parameter in
// the parameter's own dtype (fp32 under O1).
//
// Weights are cast once per forward pass: the cache maps a parameter to its half copy for the life
// of the guard (one training step), which is how O1 avoids holding several half copies of a weight
// (one of the upstream Apex users' complaints: O1 using more memory than O0).
//
//   {
//     Autocast autocast(amp_config);        // no effect unless the level is O1
//     loss = model.forward_train(images, labels);
//   }                                       // cache dropped; the graph still holds what backward needs
//   loss.backward();
#pragma once

#include <unordered_map>
#include <vector>

#include "core/amp_policy.h"
#include "core/tensor.h"

namespace seg {

class Autocast {
 public:
  explicit Autocast(const AmpConfig& config);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

  static Autocast* active();  // the innermost live guard with O1, or null
  const AmpConfig& config() const { return config_; }
  int64_t cached_casts() const { return static_cast<int64_t>(cache_.size()); }

  Tensor cast(const Tensor& t, DType dtype);  // cached for leaves (parameters)

 private:
  AmpConfig config_;
  Autocast* previous_;
  bool installed_;
  std::unordered_map<const TensorImpl*, Tensor> cache_;
};

// What ops call. Identity when no O1 guard is active (or for non-float tensors).
Tensor autocast(OpClass op, const Tensor& t);
// Casts every tensor for `op`; for Precision::widest all become the widest dtype among them.
void autocast_all(OpClass op, std::vector<Tensor>& ts);

}  // namespace seg
