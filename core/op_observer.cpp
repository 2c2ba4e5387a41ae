#include "core/op_observer.h"

#include <atomic>

#include "core/profiler.h"

namespace seg {

namespace {
std::atomic<int> g_installed{0};
thread_local OpObserver* tls_observer = nullptr;
}  // namespace

ScopedOpObserver::ScopedOpObserver(OpObserver& observer) : previous_(tls_observer) {
  tls_observer = &observer;
  g_installed.fetch_add(1, std::memory_order_relaxed);
}

ScopedOpObserver::~ScopedOpObserver() {
  tls_observer = previous_;
  g_installed.fetch_sub(1, std::memory_order_relaxed);
}

bool op_observers_installed() { return g_installed.load(std::memory_order_relaxed) > 0; }

void notify_op_forward(const char* op, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  OpObserver* obs = tls_observer;
  if (obs == nullptr) return;
  // The op's own SEG_PROFILE scope is still open while it records: its arguments are the attributes.
  static const nlohmann::json kNone;
  const nlohmann::json* attrs = prof::current_args(op);
  obs->on_forward(OpEvent{op, inputs, outputs, attrs ? *attrs : kNone});
}

}  // namespace seg
