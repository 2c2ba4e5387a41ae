#include "core/profiler.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "core/op_observer.h"
#include "core/stream.h"

#if defined(SEG_WITH_CUDA)
#include <nvtx3/nvToolsExt.h>
#endif

namespace seg::prof {

namespace {
std::atomic<bool> g_enabled{false};
std::mutex g_mutex;
std::vector<Entry> g_entries;
std::map<std::string, size_t> g_index;  // key = op|phase|args -> position in g_entries
Device g_timing_device = Device::cpu();

// Device-timed scopes whose events have not been read yet: (entry index, start, end).
struct PendingTiming {
  size_t entry;
  std::unique_ptr<Event> start, end;
};
std::vector<PendingTiming> g_pending;
std::vector<std::unique_ptr<Event>> g_event_pool;

thread_local OpContext t_op;
thread_local std::string t_module_path;  // the ModuleScopes
thread_local std::string t_leaf_path;    // the module of the last noted parameter

std::unique_ptr<Event> take_event() {
  if (!g_event_pool.empty()) {
    std::unique_ptr<Event> e = std::move(g_event_pool.back());
    g_event_pool.pop_back();
    return e;
  }
  return std::make_unique<Event>(true);
}

size_t entry_for(const char* op, const char* phase, const nlohmann::json& args) {
  const std::string key = std::string(op) + "|" + phase + "|" + args.dump();
  auto it = g_index.find(key);
  if (it != g_index.end()) return it->second;
  g_index.emplace(key, g_entries.size());
  g_entries.push_back(Entry{op, phase, args, 0, 0.0});
  return g_entries.size() - 1;
}

// Reads the pending device timings (waits for the device). Caller holds g_mutex.
void drain_pending_locked() {
  if (g_pending.empty()) return;
  for (PendingTiming& p : g_pending) {
    p.end->synchronize();
    g_entries[p.entry].seconds += 1e-3 * p.end->elapsed_ms_since(*p.start);
    g_event_pool.push_back(std::move(p.start));
    g_event_pool.push_back(std::move(p.end));
  }
  g_pending.clear();
}

[[maybe_unused]] bool nvtx_env() {
  const char* v = std::getenv("NVTX_INJECTION64_PATH");
  return v && *v;
}

[[maybe_unused]] void nvtx_push(const std::string& name) {
#if defined(SEG_WITH_CUDA)
  nvtxRangePushA(name.c_str());
#else
  (void)name;
#endif
}
[[maybe_unused]] void nvtx_pop() {
#if defined(SEG_WITH_CUDA)
  nvtxRangePop();
#endif
}
}  // namespace

void set_enabled(bool on) { g_enabled = on; }
bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

void set_device_timing(Device device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_timing_device = device;
}

std::vector<Entry> collect() {
  std::lock_guard<std::mutex> lock(g_mutex);
  drain_pending_locked();
  return g_entries;
}

void reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  drain_pending_locked();
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

OpContext current_op() { return t_op; }

bool nvtx_active() {
#if defined(SEG_WITH_CUDA)
  static const bool on = nvtx_env();
  return on;
#else
  return false;
#endif
}

std::string current_module_path() {
  if (!nvtx_active()) return std::string();
  if (t_leaf_path.empty()) return t_module_path;
  return t_module_path.empty() ? t_leaf_path : t_module_path + "/" + t_leaf_path;
}

void note_parameter(const std::string& name) {
  if (!nvtx_active() || name.empty()) return;
  const size_t first = name.find('.'), last = name.rfind('.');
  t_leaf_path = first == std::string::npos || first == last ? std::string() : name.substr(first + 1, last - first - 1);
}

ModuleScope::ModuleScope(const std::string& name) : previous_size_(t_module_path.size()) {
  if (!t_module_path.empty()) t_module_path += '/';
  t_module_path += name;
  t_leaf_path.clear();
}
ModuleScope::~ModuleScope() {
  t_module_path.resize(previous_size_);
  t_leaf_path.clear();
}

ModulePathScope::ModulePathScope(const std::string& path) : previous_(std::move(t_module_path)) {
  t_module_path = path;
  t_leaf_path.clear();
}
ModulePathScope::~ModulePathScope() {
  t_module_path = std::move(previous_);
  t_leaf_path.clear();
}


Range::Range(const char* name) : pushed_(nvtx_active()) {
  if (pushed_) nvtx_push(t_module_path.empty() ? std::string(name) : t_module_path + "/" + name);
}
Range::~Range() {
  if (pushed_) nvtx_pop();
}

Scope::Scope(const char* op, const char* phase, const std::function<nlohmann::json()>& args)
    : active_(enabled()), op_(op), phase_(phase), previous_(t_op) {
  t_op = OpContext{op, phase};
  if (nvtx_active()) {
    const std::string path = current_module_path();
    std::string name = path.empty() ? std::string(op) : path + "/" + op;
    if (std::string(phase) != "forward") name += std::string(".") + phase;
    nvtx_push(name);
    pushed_ = true;
  }
  if (!active_ && !op_observers_installed()) return;
  args_ = args();
  described_ = true;
  outer_ = tls_innermost;
  tls_innermost = this;
  if (!active_) return;
  bool on_device = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    on_device = g_timing_device.is_cuda();
  }
  if (on_device) {
    std::unique_ptr<Event> start;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      start = take_event();
    }
    start->record(current_stream(g_timing_device));
    start_event_ = start.release();
  } else {
    start_ = std::chrono::steady_clock::now();
  }
}

Scope::~Scope() {
  if (described_) tls_innermost = outer_;
  t_op = previous_;
  if (pushed_) nvtx_pop();
  if (!active_) return;
  if (start_event_) {
    std::unique_ptr<Event> start(static_cast<Event*>(start_event_));
    std::lock_guard<std::mutex> lock(g_mutex);
    std::unique_ptr<Event> end = take_event();
    end->record(current_stream(g_timing_device));
    const size_t i = entry_for(op_, phase_, args_);
    ++g_entries[i].calls;
    g_pending.push_back(PendingTiming{i, std::move(start), std::move(end)});
    return;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::lock_guard<std::mutex> lock(g_mutex);
  Entry& e = g_entries[entry_for(op_, phase_, args_)];
  ++e.calls;
  e.seconds += secs;
}

}  // namespace seg::prof
