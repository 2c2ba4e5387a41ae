#include "core/profiler.h"

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "core/op_observer.h"

namespace seg::prof {

namespace {
std::atomic<bool> g_enabled{false};
std::mutex g_mutex;
std::vector<Entry> g_entries;
std::map<std::string, size_t> g_index;  // key = op|phase|args -> position in g_entries
}  // namespace

void set_enabled(bool on) { g_enabled = on; }
bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

std::vector<Entry> collect() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_entries;
}

void reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_entries.clear();
  g_index.clear();
}

namespace {
thread_local Scope* tls_innermost = nullptr;  // innermost described scope
}  // namespace

const nlohmann::json* current_args(const char* op) {
  for (const Scope* s = tls_innermost; s != nullptr; s = s->outer()) {
    if (std::strcmp(s->op(), op) == 0) return &s->args();
  }
  return nullptr;
}

Scope::Scope(const char* op, const char* phase, const std::function<nlohmann::json()>& args)
    : active_(enabled()), op_(op), phase_(phase) {
  if (!active_ && !op_observers_installed()) return;
  args_ = args();
  described_ = true;
  outer_ = tls_innermost;
  tls_innermost = this;
  if (active_) start_ = std::chrono::steady_clock::now();
}

Scope::~Scope() {
  if (described_) tls_innermost = outer_;
  if (!active_) return;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string key = std::string(op_) + "|" + phase_ + "|" + args_.dump();
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_index.find(key);
  if (it == g_index.end()) {
    g_index.emplace(key, g_entries.size());
    g_entries.push_back(Entry{op_, phase_, args_, 1, secs});
  } else {
    Entry& e = g_entries[it->second];
    ++e.calls;
    e.seconds += secs;
  }
}

}  // namespace seg::prof
