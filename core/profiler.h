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

// The arguments of the innermost open scope of `op` on this thread, or null. Scopes compute their
// arguments when profiling is on or an op observer is installed (core/op_observer.h), which is how
// an observer learns an op's attributes (stride, padding, ...) without a second description.
const nlohmann::json* current_args(const char* op);

class Scope {
 public:
  Scope(const char* op, const char* phase, const std::function<nlohmann::json()>& args);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  const char* op() const { return op_; }
  const nlohmann::json& args() const { return args_; }
  const Scope* outer() const { return outer_; }

 private:
  bool active_;
  bool described_ = false;  // args_ computed (profiling or an observer)
  Scope* outer_ = nullptr;  // the enclosing described scope on this thread
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
