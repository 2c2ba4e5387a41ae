// --amp-stats' activation table: per op class, how many forward activations and how many backward
// gradients (as computed, i.e. multiplied by the loss scale in force) fall outside f16's range:
// nonzero values that would flush to zero (|x| < 2^-25) and values that would overflow (> 65504).
//
// Which op loses range is the lesson of docs/mixed-precision.md: in MobileNetV2 and ResNet50 the
// backward gradients of the early convolutions are where unscaled f16 flushes most values to zero,
// and where a too large scale overflows first. An op observer (core/op_observer.h) counts every
// output and every gradient of one step; the trainer installs it on the steps it prints.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/op_observer.h"

namespace seg {

struct RangeCounts {
  int64_t values = 0, zero = 0, flush = 0, overflow = 0;  // zero: exact zeros (not an underflow); nan/inf count as overflow
};

class ActivationRanges final : public OpObserver {
 public:
  void on_forward(const OpEvent& e) override;
  void on_backward(const BackwardEvent& e) override;
  // One line per op class (first-seen order kept by name), forward and backward shares.
  std::string table(double loss_scale) const;

  std::map<std::string, RangeCounts> forward, backward;  // by op name
};

}  // namespace seg
