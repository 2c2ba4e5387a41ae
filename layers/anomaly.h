// --detect-anomaly: the first op whose forward output or backward gradient holds an inf or NaN, named
// with its module in upstream's names, its inputs' and outputs' ranges and the loss scale in force.
//
// An op observer (core/op_observer.h) checks every output of every op (forward) and every gradient
// a backward rule returns (backward). The first non-finite value is where the inf/NaN was *born*:
// everything after it only carries it along. What happens then:
//
//   forward, any AMP level          the step stops: Error (exit 1) with the full report
//   backward, dynamic loss scaling  expected (an overflow is how the scaler finds its scale): the
//                                   first one is remembered, the step finishes and is skipped as
//                                   usual, and the trainer prints one line naming the op and module
//   backward, no or static scaling  the step stops: Error (exit 1) with the full report
//
// Module names: an op that reads a parameter (conv2d, batch_norm) is named by that parameter's
// module ("encoder.features.14.conv.3"); autocast copies of a parameter keep its name. An op
// without parameters (relu, add, resize, the loss) is named after the last module before it
// ("after decoder.conv_last"): the models call those ops directly, so they have no module of
// their own here.
//
// Cost: off, one relaxed atomic load per op (core/op_observer.h). On, one pass over each output and
// gradient to look for inf/NaN (ranges are computed only for the report); measured in
// docs/mixed-precision.md with `segtrain bench --detect-anomaly`. CPU tensors are scanned in place;
// other devices are copied to the host first (a device-side check with one flag per op is for the
// CUDA backend).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/op_observer.h"
#include "layers/module.h"

namespace seg {

// What a tensor holds, for reports: counts of special values and the range of the finite ones.
struct TensorRange {
  int64_t numel = 0, nan = 0, inf = 0, subnormal = 0;  // subnormal in the tensor's own dtype
  double min = 0, max = 0, mean_abs = 0;               // over the finite values
};
TensorRange tensor_range(const Tensor& t);
// True when every element is finite (the fast check: no ranges).
bool all_finite(const Tensor& t);

struct Anomaly {
  std::string direction;  // "forward" or "backward"
  std::string op;         // "conv2d", "softmax_nll_loss", ...
  std::string module;     // "encoder.features.14.conv.3" or "after decoder.conv_last"
  std::string report;     // the full multi-line report
  std::string one_line;   // op, module, input and scale on one line (skipped steps)
};

class AnomalyDetector final : public OpObserver {
 public:
  // `model`: where parameter names come from (a SegmentationModule gives "encoder."/"decoder." names).
  explicit AnomalyDetector(const Module& model);

  // The loss scale of this step, and whether it is dynamic (then backward overflows do not stop).
  void begin_step(double loss_scale, bool dynamic_scaling);
  // The first backward anomaly of the step under dynamic scaling (the step was then skipped).
  const std::optional<Anomaly>& backward_anomaly() const { return backward_; }

  void on_forward(const OpEvent& e) override;
  void on_backward(const BackwardEvent& e) override;

 private:
  struct NodeInfo {
    std::string op, module;
    std::vector<std::string> inputs;  // how each input is described in reports
  };
  std::string name_of(const Tensor& t) const;
  std::string module_for(const std::vector<Tensor>& inputs);
  [[noreturn]] void stop(const Anomaly& a) const;

  std::unordered_map<const TensorImpl*, std::string> names_;  // parameters, buffers, their autocast copies
  std::unordered_map<const Node*, NodeInfo> nodes_;           // forward's description of each node, this step
  std::vector<Tensor> held_;  // autocast copies whose names are kept: held so their address is not reused
  std::string last_module_;
  double scale_ = 1;
  bool dynamic_ = false;
  std::optional<Anomaly> backward_;
};

}  // namespace seg
