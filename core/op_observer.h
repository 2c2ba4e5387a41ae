// Op observers: code that wants to see every differentiable op as it runs (the ONNX exporter traces
// the model's graph with one; anomaly detection checks every output and every gradient with one).
//
// Every op in layers/ ends with core/autograd.h's record(op, inputs, outputs, backward), in training
// and in inference alike, so record() is the one place that sees them all: when an observer is
// installed it calls on_forward() with the op's name, its input and output tensors and the op's
// attributes (the JSON the op gives its SEG_PROFILE scope: stride, padding, kernel, ...).
//
// Backward: the engine (core/autograd.cpp run_backward) calls on_backward() after each node's
// backward rule ran, with the gradients it received (one per output of the op) and the ones it
// produced (one per input).
//
// Cost when no observer is installed: one relaxed atomic load per op. Observers are per thread
// (the op runs on the thread that called it) and nest: every installed one sees the op, innermost
// first (anomaly detection and --amp-stats' activation ranges can watch the same step).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace seg {

struct OpEvent {
  const char* op;                      // the op's name as record() got it: "conv2d", "relu", ...
  const std::vector<Tensor>& inputs;   // as the op got them (undefined tensors for absent arguments)
  const std::vector<Tensor>& outputs;  // freshly made by the op
  const nlohmann::json& attrs;         // the op's profile arguments (null when it has none)
};

class Node;  // core/autograd.h

struct BackwardEvent {
  const Node& node;                       // its name() is the op's name; AccumulateGrad for leaves
  const std::vector<Tensor>& grads_out;   // d loss / d outputs (undefined where none arrived)
  const std::vector<Tensor>& grads_in;    // d loss / d inputs, as the rule returned them
};

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // outputs[0].grad_fn() is the op's autograd node when a gradient is recorded (null otherwise).
  virtual void on_forward(const OpEvent& event) = 0;
  virtual void on_backward(const BackwardEvent&) {}
};

// Installs an observer on this thread for the guard's lifetime. Several may be installed at once
// (each op reaches all of them, innermost first), and they may end in any order: one that ends
// while an inner one is still installed is unlinked from the chain (two std::optional guards reset
// in the order they were made must not leave the inner one pointing at the ended one).
class ScopedOpObserver {
 public:
  explicit ScopedOpObserver(OpObserver& observer);
  ~ScopedOpObserver();
  ScopedOpObserver(const ScopedOpObserver&) = delete;
  ScopedOpObserver& operator=(const ScopedOpObserver&) = delete;
  OpObserver& observer() const { return *observer_; }
  const ScopedOpObserver* outer() const { return outer_; }

 private:
  OpObserver* observer_;
  ScopedOpObserver* outer_;
};

// Whether any thread has an observer installed (cheap; the per-thread check follows).
bool op_observers_installed();
// Calls this thread's observer, if any (record() does).
void notify_op_forward(const char* op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);
// Backward rules compute with the forward ops (dx = mul(dy, w)); while the engine runs them they are
// not reported as forward ops: on_backward() sees their results as the node's gradients.
class BackwardScope {
 public:
  BackwardScope();
  ~BackwardScope();
  BackwardScope(const BackwardScope&) = delete;
  BackwardScope& operator=(const BackwardScope&) = delete;
};
// Calls this thread's observer after a backward rule ran (the engine does).
void notify_op_backward(const Node& node, const std::vector<Tensor>& grads_out, const std::vector<Tensor>& grads_in);

}  // namespace seg
