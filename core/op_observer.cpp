#include "core/op_observer.h"

#include <atomic>

#include "core/profiler.h"

namespace seg {

namespace {
std::atomic<int> g_installed{0};
thread_local ScopedOpObserver* tls_scope = nullptr;  // innermost installed scope
thread_local int tls_backward_depth = 0;
}  // namespace

ScopedOpObserver::ScopedOpObserver(OpObserver& observer) : observer_(&observer), outer_(tls_scope) {
  tls_scope = this;
  g_installed.fetch_add(1, std::memory_order_relaxed);
}

ScopedOpObserver::~ScopedOpObserver() {
  if (tls_scope == this) {
    tls_scope = outer_;
  } else {
    // Not the innermost: the scope just inside this one now continues with this one's outer.
    for (ScopedOpObserver* s = tls_scope; s != nullptr; s = s->outer_)
      if (s->outer_ == this) {
        s->outer_ = outer_;
        break;
      }
  }
  g_installed.fetch_sub(1, std::memory_order_relaxed);
}

BackwardScope::BackwardScope() { ++tls_backward_depth; }
BackwardScope::~BackwardScope() { --tls_backward_depth; }

bool op_observers_installed() { return g_installed.load(std::memory_order_relaxed) > 0; }

void notify_op_forward(const char* op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  if (tls_scope == nullptr || tls_backward_depth > 0) return;
  // The op's own SEG_PROFILE scope is still open while it records: its arguments are the attributes.
  static const nlohmann::json kNone;
  const nlohmann::json* attrs = prof::current_args(op);
  const OpEvent event{op, inputs, outputs, attrs ? *attrs : kNone};
  for (const ScopedOpObserver* s = tls_scope; s != nullptr; s = s->outer()) s->observer().on_forward(event);
}

void notify_op_backward(const Node& node, const std::vector<Tensor>& grads_out, const std::vector<Tensor>& grads_in) {
  const BackwardEvent event{node, grads_out, grads_in};
  for (const ScopedOpObserver* s = tls_scope; s != nullptr; s = s->outer()) s->observer().on_backward(event);
}

}  // namespace seg
