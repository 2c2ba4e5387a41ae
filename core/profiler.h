// An op-level profiler: when enabled, every instrumented op records its name, phase (forward,
// backward, step, data), a JSON description of its arguments (shapes and hyper-parameters) and its
// wall time. `segtrain bench` turns the records into the per-op table, and writes them as JSON so
// tools/bench/torch_ops.py can time the very same ops in PyTorch.
//
// Disabled (the default) it costs one branch per op: the argument description is a lambda that
// only runs when profiling is on. Under CUDA builds the same scopes will emit NVTX ranges.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace seg::prof {

void set_enabled(bool on);
bool enabled();

struct Entry {
  std::string op;
  std::string phase;
  nlohmann::json args;
  int64_t calls = 0;
  double seconds = 0;
};
// Aggregated by (op, phase, args), in first-seen order.
std::vector<Entry> collect();
void reset();

class Scope {
 public:
  Scope(const char* op, const char* phase, const std::function<nlohmann::json()>& args);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool active_;
  const char* op_;
  const char* phase_;
  nlohmann::json args_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace seg::prof

#define SEG_PROF_CAT2(a, b) a##b
#define SEG_PROF_CAT(a, b) SEG_PROF_CAT2(a, b)
// SEG_PROFILE("conv2d", "forward", {{"x", shape}, ...}) : times the rest of the enclosing scope.
#define SEG_PROFILE(op, phase, ...) \
  ::seg::prof::Scope SEG_PROF_CAT(seg_prof_scope_, __LINE__)(op, phase, [&]() -> nlohmann::json { return __VA_ARGS__; })
