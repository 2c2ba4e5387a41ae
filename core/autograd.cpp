#include "core/autograd.h"

#include <algorithm>
#include <atomic>
#include <queue>
#include <unordered_map>

#include "core/op_observer.h"
#include "kernels/cpu/elementwise.h"

namespace seg {

// ---------------------------------------------------------------- nodes and recording

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
thread_local bool t_grad_enabled = true;

AutogradMeta& meta(const Tensor& t) {
  TensorImpl* impl = t.impl();
  SEG_ASSERT(impl != nullptr, "autograd on an undefined tensor");
  if (!impl->autograd) impl->autograd = std::make_shared<AutogradMeta>();
  return *impl->autograd;
}
const AutogradMeta* meta_if(const Tensor& t) { return t.defined() ? t.impl()->autograd.get() : nullptr; }

// The sink at a leaf: adds the incoming gradient into leaf.grad, then runs the leaf's hooks.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf) : Node("AccumulateGrad", 1), leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(const std::vector<Tensor>& grads_out) override {
    const Tensor& g = grads_out[0];
    if (!g.defined()) return {};
    AutogradMeta& m = meta(leaf_);
    if (!m.grad.defined()) {
      // Own the gradient: it may be shared with another path of the graph (add returns one
      // tensor for both inputs), and later steps accumulate into it in place.
      m.grad = g.impl_ptr().use_count() == 1 && g.impl()->storage.use_count() == 1 ? g : g.clone();
    } else {
      accumulate_into(m.grad, g);
    }
    for (const auto& hook : m.grad_ready_hooks) hook(leaf_);
    return {};
  }

 private:
  Tensor leaf_;
};
}  // namespace

Node::Node(std::string name, int num_outputs)
    : name_(std::move(name)), sequence_nr_(g_next_sequence_nr++), num_outputs_(num_outputs) {}

std::vector<Tensor> Node::apply(const std::vector<Tensor>& grads_out) {
  if (!backward_)
    SEG_FAIL(runtime, "backward through '", name_, "' a second time: its saved tensors were already freed")
        .hint("call backward() once per forward pass");
  BackwardFn fn = std::move(backward_);
  backward_ = nullptr;  // frees the saved tensors as soon as fn goes out of scope below
  return fn(grads_out);
}

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

bool any_requires_grad(const std::vector<Tensor>& tensors) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : tensors)
    if (t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  const AutogradMeta* m = meta_if(t);
  if (!m) return {};
  if (m->grad_fn) return Edge{m->grad_fn, m->output_nr};
  if (!m->requires_grad) return {};
  AutogradMeta& mm = meta(t);
  std::shared_ptr<Node> acc = mm.grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    mm.grad_accumulator = acc;
  }
  return Edge{acc, 0};
}

std::shared_ptr<Node> record(const char* op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                             BackwardFn backward) {
  std::shared_ptr<Node> node;
  if (any_requires_grad(inputs)) {
    node = std::make_shared<Node>(op, static_cast<int>(outputs.size()));
    node->next_.reserve(inputs.size());
    for (const Tensor& in : inputs) node->next_.push_back(in.defined() ? gradient_edge(in) : Edge{});
    node->backward_ = std::move(backward);
    for (size_t i = 0; i < outputs.size(); ++i) {
      AutogradMeta& m = meta(outputs[i]);
      m.requires_grad = true;
      m.grad_fn = node;
      m.output_nr = static_cast<int>(i);
    }
  }
  // After the node exists, so an observer can find it through outputs[0].grad_fn().
  if (op_observers_installed()) notify_op_forward(op, inputs, outputs);
  return node;
}

// ---------------------------------------------------------------- gradient sums

void accumulate_into(Tensor& dst, const Tensor& src) {
  SEG_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype(), runtime, "gradient accumulation: ", src.str(),
            " into ", dst.str());
  SEG_CHECK(dst.device().is_cpu() && src.device().is_cpu(), device,
            "gradient accumulation on ", dst.device().str(), " is not implemented yet");
  Tensor s = src.contiguous();
  if (!dst.is_contiguous()) dst = dst.contiguous();
  SEG_DISPATCH("accumulate_grad", dst.dtype(), dst.device(), (DType::f32, DType::f64, DType::f16, DType::bf16),
               [&](auto tag) {
                 using T = SEG_TYPE(tag);
                 cpu::add_inplace(dst.data<T>(), s.data<T>(), dst.numel());
               });
}

// ---------------------------------------------------------------- the backward engine

namespace {
struct ByNewest {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

// Sums a gradient into a slot. The first gradient is taken as is; a second one is added out of
// place unless the slot exclusively owns its tensor (then in place, saving an allocation).
void add_to_slot(Tensor& slot, Tensor g) {
  if (!slot.defined()) {
    slot = std::move(g);
    return;
  }
  if (slot.impl_ptr().use_count() == 1 && slot.impl()->storage.use_count() == 1) {
    accumulate_into(slot, g);
  } else {
    Tensor sum = slot.clone();
    accumulate_into(sum, g);
    slot = std::move(sum);
  }
}
}  // namespace

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads) {
  SEG_ASSERT(roots.size() == grads.size());
  NoGradGuard no_grad;  // backward rules compute with plain tensors
  BackwardScope in_backward;  // ... and their ops are not forward ops to an observer

  std::vector<Edge> root_edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    Edge e = gradient_edge(roots[i]);
    if (!e.valid())
      SEG_FAIL(runtime, "backward() on a tensor that does not require grad (", roots[i].str(), ")")
          .hint("make sure a parameter with requires_grad feeds the loss, and that no NoGradGuard is active");
    root_edges.push_back(e);
  }

  // 1. Dependency counts: how many edges point at each node reachable from the roots.
  std::unordered_map<Node*, int> pending;
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::vector<Node*> stack;
  for (const Edge& e : root_edges)
    if (pending.emplace(e.node.get(), 0).second) stack.push_back(e.node.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      auto [it, inserted] = pending.emplace(e.node.get(), 0);
      ++it->second;
      if (inserted) stack.push_back(e.node.get());
    }
  }

  // 2. Seed the root gradients.
  for (size_t i = 0; i < roots.size(); ++i) {
    Tensor g = grads[i];
    if (!g.defined()) {
      SEG_CHECK(roots[i].numel() == 1, runtime, "backward() without a gradient needs a one-element tensor, got ",
                roots[i].str());
      g = Tensor::full(roots[i].shape(), 1.0, roots[i].dtype(), roots[i].device());
    }
    SEG_CHECK(g.shape() == roots[i].shape(), runtime, "backward(): gradient ", g.str(), " for tensor ", roots[i].str());
    auto& buf = buffers[root_edges[i].node.get()];
    buf.resize(static_cast<size_t>(root_edges[i].node->num_outputs()));
    add_to_slot(buf[static_cast<size_t>(root_edges[i].input_nr)], g);
  }

  // 3. Run ready nodes, newest first.
  std::priority_queue<Node*, std::vector<Node*>, ByNewest> ready;
  for (const Edge& e : root_edges)
    if (pending[e.node.get()] == 0) ready.push(e.node.get());
  std::unordered_map<Node*, bool> queued;
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    if (queued[n]) continue;
    queued[n] = true;
    std::vector<Tensor> grads_out = std::move(buffers[n]);
    buffers.erase(n);
    grads_out.resize(static_cast<size_t>(n->num_outputs()));
    const bool any = std::any_of(grads_out.begin(), grads_out.end(), [](const Tensor& t) { return t.defined(); });
    std::vector<Tensor> grads_in;
    if (any) {
      grads_in = n->apply(grads_out);
      if (op_observers_installed()) notify_op_backward(*n, grads_out, grads_in);
    }
    grads_out.clear();
    const auto& edges = n->next_edges();
    SEG_CHECK(!any || grads_in.size() == edges.size() || edges.empty(), runtime, "backward of '", n->name(),
              "' returned ", grads_in.size(), " gradients for ", edges.size(), " inputs");
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      if (any && grads_in[i].defined()) {
        auto& buf = buffers[e.node.get()];
        buf.resize(static_cast<size_t>(e.node->num_outputs()));
        add_to_slot(buf[static_cast<size_t>(e.input_nr)], std::move(grads_in[i]));
      }
      if (--pending[e.node.get()] == 0) ready.push(e.node.get());
    }
  }
}

// ---------------------------------------------------------------- Tensor's autograd API

bool Tensor::requires_grad() const {
  const AutogradMeta* m = meta_if(*this);
  return m && m->requires_grad;
}

Tensor& Tensor::set_requires_grad(bool on) {
  SEG_CHECK(is_leaf(), runtime, "set_requires_grad on a non-leaf tensor ", str(), " (produced by ",
            grad_fn()->name(), ")");
  SEG_CHECK(!on || is_floating(dtype()), runtime, "only floating-point tensors can require grad, got ", str());
  meta(*this).requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const {
  const AutogradMeta* m = meta_if(*this);
  return !m || !m->grad_fn;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  const AutogradMeta* m = meta_if(*this);
  return m ? m->grad : undefined;
}

void Tensor::set_grad(const Tensor& g) {
  SEG_CHECK(!g.defined() || (g.shape() == shape() && g.dtype() == dtype()), runtime, "set_grad: ", g.str(),
            " for tensor ", str());
  meta(*this).grad = g;
}

void Tensor::zero_grad() {
  if (impl_ && impl_->autograd) impl_->autograd->grad = Tensor();
}

std::shared_ptr<Node> Tensor::grad_fn() const {
  const AutogradMeta* m = meta_if(*this);
  return m ? m->grad_fn : nullptr;
}

void Tensor::backward(const Tensor& grad) const { run_backward({*this}, {grad}); }

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->autograd = nullptr;
  return Tensor(std::move(impl));
}

void Tensor::add_grad_ready_hook(std::function<void(const Tensor&)> hook) {
  SEG_CHECK(is_leaf(), runtime, "gradient-ready hooks are for leaves (parameters), not ", str());
  meta(*this).grad_ready_hooks.push_back(std::move(hook));
}

const std::string& Tensor::name() const {
  static const std::string empty;
  const AutogradMeta* m = meta_if(*this);
  return m ? m->name : empty;
}

Tensor& Tensor::set_name(const std::string& n) {
  meta(*this).name = n;
  return *this;
}

}  // namespace seg
