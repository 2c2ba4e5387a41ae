// Op observers: code that wants to see every differentiable op as it runs (the ONNX exporter traces
// the model's graph with one; anomaly detection checks every output with one).
//
// Every op in layers/ ends with core/autograd.h's record(op, inputs, outputs, backward), in training
// and in inference alike, so record() is the one place that sees them all: when an observer is
// installed it calls on_forward() with the op's name, its input and output tensors and the op's
// attributes (the JSON the op gives its SEG_PROFILE scope: stride, padding, kernel, ...).
//
// Cost when no observer is installed: one relaxed atomic load per op. Observers are per thread
// (the op runs on the thread that called it) and nest: the innermost one sees the op.
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

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void on_forward(const OpEvent& event) = 0;
};

// Installs an observer on this thread for the guard's lifetime.
class ScopedOpObserver {
 public:
  explicit ScopedOpObserver(OpObserver& observer);
  ~ScopedOpObserver();
  ScopedOpObserver(const ScopedOpObserver&) = delete;
  ScopedOpObserver& operator=(const ScopedOpObserver&) = delete;

 private:
  OpObserver* previous_;
};

// Whether any thread has an observer installed (cheap; the per-thread check follows).
bool op_observers_installed();
// Calls this thread's observer, if any (record() does).
void notify_op_forward(const char* op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);

}  // namespace seg
