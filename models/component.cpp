#include "models/component.h"

namespace seg {

std::vector<Conv2d*> ModelComponent::convs() const {
  std::vector<Conv2d*> out;
  for (const auto& c : make_.convs()) out.push_back(c.get());
  return out;
}

std::vector<BatchNorm2d*> ModelComponent::batch_norms() const {
  std::vector<BatchNorm2d*> out;
  for (const auto& b : make_.batch_norms()) out.push_back(b.get());
  return out;
}

std::vector<Dropout2d*> ModelComponent::dropouts() const {
  std::vector<Dropout2d*> out;
  for (const auto& d : make_.dropouts()) out.push_back(d.get());
  return out;
}

}  // namespace seg
