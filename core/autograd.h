// Reverse-mode automatic differentiation: a define-by-run tape (DESIGN decision 5).
//
// Every differentiable op does its forward computation, then calls record() with its inputs, its
// outputs and a backward function. record() creates a Node that remembers, for each input, where its
// gradient must go (an Edge), and makes the Node the outputs' grad_fn. Nothing is recorded when no
// input requires a gradient, or inside a NoGradGuard.
//
// Tensor::backward() then walks the graph from the loss:
//   1. count, for every node reachable from the loss, how many gradients it will receive;
//   2. run nodes whose gradients are complete, newest first (by creation sequence number, so the
//      order is deterministic), passing each result along the node's edges and summing gradients
//      that meet at the same input;
//   3. free each node's saved tensors right after its backward ran (the backward function is a
//      closure over what it saved; dropping the closure frees them);
//   4. at a leaf (a parameter), add into .grad and then call its "gradient ready" hooks, which is
//      where bucketed all-reduce will start while the rest of backward still runs.
//
// The backward rules themselves live next to each op's forward in layers/ops_*.cpp (index:
// layers/ops.h): one place per op, forward and backward side by side.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace seg {

class Node;

// Where one input's gradient goes: input slot `input_nr` of `node`.
struct Edge {
  std::shared_ptr<Node> node;
  int input_nr = 0;
  bool valid() const { return node != nullptr; }
};

// grads_out[i] is the gradient w.r.t. output i (undefined if that output got none: treat as zero).
// Returns one gradient per input (undefined where needs_input_grad(i) is false).
using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads_out)>;
using GradReadyHook = std::function<void(const Tensor& param)>;

class Node {
 public:
  Node(std::string name, int num_outputs);
  virtual ~Node() = default;

  const std::string& name() const { return name_; }
  // The module path the op was recorded under (core/profiler.h): backward runs under it again, so
  // the backward's NVTX ranges carry the same names as the forward's.
  const std::string& module_path() const { return module_path_; }
  uint64_t sequence_nr() const { return sequence_nr_; }
  int num_outputs() const { return num_outputs_; }
  const std::vector<Edge>& next_edges() const { return next_; }
  bool needs_input_grad(int i) const { return next_[static_cast<size_t>(i)].valid(); }

  // Runs the backward rule (then forgets it, freeing the saved tensors).
  virtual std::vector<Tensor> apply(const std::vector<Tensor>& grads_out);
  bool released() const { return !backward_; }

 private:
  friend std::shared_ptr<Node> record(const char*, const std::vector<Tensor>&, const std::vector<Tensor>&, BackwardFn);
  friend Edge gradient_edge(const Tensor& t);
  std::string name_;
  std::string module_path_;
  uint64_t sequence_nr_;
  int num_outputs_;
  std::vector<Edge> next_;
  BackwardFn backward_;
};

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                        // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;      // the op that produced this tensor (null for leaves)
  int output_nr = 0;                  // which output of grad_fn
  std::weak_ptr<Node> grad_accumulator;  // a leaf's AccumulateGrad node, shared by all its uses
  std::vector<GradReadyHook> grad_ready_hooks;
  std::string name;                   // parameter name, for messages
};

// ---- grad mode ----
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True if recording is on and any of the tensors requires a gradient.
bool any_requires_grad(const std::vector<Tensor>& tensors);

// Records an op: returns the new node, or null when nothing needs a gradient (then the outputs stay
// plain tensors). Output tensors must be freshly created by the op (not views of its inputs).
std::shared_ptr<Node> record(const char* op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                             BackwardFn backward);

// The edge a gradient of `t` flows into (its grad_fn, or its leaf accumulator), invalid if none.
Edge gradient_edge(const Tensor& t);

// Runs backward from `roots` with the given output gradients (a root with an undefined gradient
// must be a one-element tensor, which gets gradient 1).
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads);

// dst += src (same shape and dtype, any device that has the kernel); used for gradient sums.
void accumulate_into(Tensor& dst, const Tensor& src);

}  // namespace seg
