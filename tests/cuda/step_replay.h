// Op-by-op replay of a training step on cuda:0 against the same step on the CPU.
//
// Why not compare the two whole steps element by element: f32 rounding (a different summation
// order) moves a few pre-activations across ReLU/ReLU6's kink, and one such flip changes every
// gradient upstream of it by ~1% (docs/cuda-backend.md). Comparing op by op, each op fed the
// CPU's own inputs, removes that: a flip needs two different inputs to one comparison.
//
// How: the CPU step runs under a StepRecorder (core/op_observer.h): every op's inputs and outputs
// in forward, and every backward node's incoming and returned gradients, copied to host memory.
// The cuda:0 step then runs under a StepReplayer which, at each op, in order:
//   1. checks that the op got the inputs the CPU's op got, bit for bit (NaN payloads aside);
//   2. compares each output (forward) or returned gradient (backward) with the CPU's;
//   3. overwrites it in place with the CPU's, so the next op again starts from the CPU's values.
// The same op sequence on both devices is a precondition (same model, same code path): the names
// are checked op by op. What 1 proves: every input of every op on the step's path was either
// made by an op the replay saw, or is the same on both devices (parameters, images, labels).
//
// The bound of 2, per element, |cuda - target| <= atol + rtol |target|:
// - O0, with a float64 reference: the same model in f64 on the CPU replays the CPU's f32 record
//   (each f64 op fed the f32 CPU's inputs, widened exactly), so each of its outputs is the exact
//   result, up to f64 rounding, of the f32 op's inputs. The target is that reference; atol is 8x
//   the CPU's own largest error on the output plus 8 f32 roundings of the element's term scale,
//   rtol one f32 rounding (step_replay.cpp: kTimesCpuError, kRoundingsOfTerms).
// - the AMP levels (their casts have no counterpart in the f64 model): the target is the CPU's
//   output; ReplayTolerance below.
// The term scale is the size of the terms an element sums: the output's largest element, except
// for BatchNorm's parameter gradients (sum |dy| (1 + |xhat|) per channel; step_replay.cpp).
//
// A flip can still happen inside one op where the op decides a mask from numbers it computes
// itself: the fused BatchNorm+ReLU(6) backward recomputes v = (x - mean)*scale + beta from its
// own mean and scale, which the two devices round differently (seen once, in bf16: one element of
// a 576-channel BatchNorm+ReLU6 of MobileNetV2dilated changed its channel's dx and dbeta). The
// channels where an element's v is that close to a kink are left out of that node's comparison
// and counted (step_replay.cpp, kink_channels).
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/autograd.h"
#include "core/op_observer.h"
#include "core/tensor.h"
#include "tests/common/compare.h"

namespace seg::test {

// One op (forward) or one backward node, as one device ran it: host copies.
struct OpRecord {
  std::string name;            // the op's name ("conv2d"); backward: the node's (the same)
  std::string what;            // the first input's description, to find the op in a report
  std::vector<Tensor> inputs;  // forward: the inputs (undefined for absent arguments); backward: incoming gradients
  std::vector<Tensor> outputs; // forward: the outputs; backward: the gradients it returned
  int64_t forward_index = -1;  // backward: the forward op that made this node (-1: a leaf's)
};

struct StepRecord {
  std::vector<OpRecord> forward, backward;
};

class StepRecorder final : public OpObserver {
 public:
  void on_forward(const OpEvent& e) override;
  void on_backward(const BackwardEvent& e) override;
  StepRecord record;

 private:
  std::unordered_map<const Node*, int64_t> forward_of_;  // node -> index in record.forward
};

// The bound without a reference, |got - want| <= atol + rtol * |want| per element:
//   rtol = rounding(dtype): one rounding to the storage type (one ulp: 2^-23 in f32, 2^-10 f16,
//          2^-7 bf16): the two devices' f32 results may straddle a rounding boundary of the type;
//   atol = `f32_eps_of_terms` f32 epsilons (2^-24) of the element's term scale (by default the
//          output's largest element; step_replay.cpp, term_scales), at least floor(dtype): the f32
//          accumulation's own error, which scales with the sum of |terms|, not with the element;
//   on a real GPU, convolutions add ceil(K / 16) f32 ulps (2^-23) of the term scale, K the sum's
//   length (tensor_core_steps in step_replay.cpp): tensor cores truncate where the simulator's f32
//   accumulation rounds to nearest (Fasi et al., "Numerical behavior of NVIDIA tensor cores",
//   2021: alignment and normalisation round toward zero), so each m16n8k16 step may lose up to one
//   ulp of the partial sum, and the losses all point toward zero: they add up over the K / 16 steps
//   instead of cancelling. Without it the first H200 run put 5 of 16384 outputs of a K = 23040
//   f16 convolution (ResNet18dilated's PPM, 3x3 over 2560 channels) at up to 1.63x the bound.
struct ReplayTolerance {
  double f32_eps_of_terms = 64;
#ifdef SEG_TEST_ON_GPU
  bool truncating_tensor_cores = true;
#else
  bool truncating_tensor_cores = false;  // the simulator's mma.sync accumulates in f32, rounding to nearest
#endif
  static double rounding(DType dt);
  static double floor(DType dt);  // f16: 2^-24, its subnormal spacing; else 0
};

// Largest errors seen per op name and dtype, in the units of the bound (for the report).
struct OpErrorStats {
  int64_t outputs = 0;
  double worst = 0;  // max over elements of |got - ref| / (the bound's atol + rtol |ref|)
  std::string worst_at;
};

class StepReplayer final : public OpObserver {
 public:
  // Replays `want`, the CPU's record, in one of two roles:
  // check: compares each output with the CPU's (against `reference`, the f64 replay's computed()
  //   record, when given; else with ReplayTolerance) and checks every input bit for bit.
  // reference: the f64 replay; records what it computes and compares nothing. Its forward inputs
  //   must be the CPU's values; its incoming gradients are not checked: where two paths meet
  //   (residual blocks) they are f64 sums of the CPU's f32 gradients, one f32 rounding away from
  //   the CPU's f32 sums.
  enum class Role { check, reference };
  StepReplayer(const StepRecord& want, Role role, const StepRecord* reference = nullptr, ReplayTolerance tol = {})
      : want_(want), role_(role), ref_(reference), tol_(tol) {}
  void on_forward(const OpEvent& e) override;
  void on_backward(const BackwardEvent& e) override;

  size_t forward_seen() const { return fwd_; }
  size_t backward_seen() const { return bwd_; }
  int64_t outputs_compared() const { return compared_; }
  // Channels of fused BatchNorm+ReLU(6) backward nodes left out: a kink flip was possible there
  // (step_replay.cpp, kink_channels).
  int64_t kink_channels_skipped() const { return kink_channels_; }
  // What this device computed at each op, before the overwrite (the f64 replay's is the reference).
  const StepRecord& computed() const { return computed_; }
  // Inputs that were not the CPU's (see 1 above), "forward #3 conv2d (f32[2, 32, 32, 3] cpu): input 0".
  const std::vector<std::string>& input_differences() const { return input_diffs_; }
  // Outputs outside the bound, "... output 0: <Comparison::str()>".
  const std::vector<std::string>& mismatches() const { return mismatches_; }
  // Output count, shape or dtype different from the CPU's.
  const std::vector<std::string>& sequence_errors() const { return sequence_errors_; }
  // One line per op name and dtype: outputs compared, worst error as a fraction of the bound.
  std::string stats_table() const;

 private:
  void check_inputs(const char* phase, size_t index, const OpRecord& want, const std::vector<Tensor>& got);
  void compare_and_overwrite(const char* phase, size_t index, const OpRecord& want, const OpRecord* ref,
                             const std::vector<Tensor>& got, OpRecord& computed);
  const StepRecord& want_;
  Role role_;
  const StepRecord* ref_;
  ReplayTolerance tol_;
  size_t fwd_ = 0, bwd_ = 0;
  int64_t compared_ = 0, kink_channels_ = 0;
  StepRecord computed_;
  std::vector<std::string> input_diffs_, mismatches_, sequence_errors_;
  std::map<std::string, OpErrorStats> stats_;
};

}  // namespace seg::test
