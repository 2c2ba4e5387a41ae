// What encoders and decoders share: an upstream architecture name and the LayerMaker that built
// (and remembers) their layers.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "layers/module.h"
#include "models/layer_maker.h"

namespace seg {

class ModelComponent : public Module {
 public:
  const std::string& arch() const { return arch_; }
  // Every Conv2d / BatchNorm / Dropout of this component, in construction order.
  std::vector<Conv2d*> convs() const;
  std::vector<BatchNorm2d*> batch_norms() const;
  std::vector<Dropout2d*> dropouts() const;
  double bn_momentum() const { return make_.bn_momentum(); }
  void set_bn_momentum(double m) { make_.set_bn_momentum(m); }

 protected:
  ModelComponent(std::string arch, double bn_momentum) : arch_(std::move(arch)), make_(bn_momentum) {}
  std::string arch_;
  LayerMaker make_;
};

}  // namespace seg
