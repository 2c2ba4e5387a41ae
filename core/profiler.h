// An op-level profiler: when enabled, every instrumented op records its name, phase (forward,
// backward, step, data), a JSON description of its arguments (shapes and hyper-parameters) and its
// wall time. `segtrain bench` turns the records into the per-op table, and writes them as JSON so
// tools/bench/torch_ops.py can time the very same ops in PyTorch.
//
// Disabled (the default) it costs one branch per op: the argument description is a lambda that
// only runs when profiling is on.
//
// The same scopes name the code for the rest of the system:
//  * the innermost op scope of a thread is current_op(), which an out-of-memory error names;
//  * in CUDA builds each scope is an NVTX range named like the model, "<module path>/<op>" for a
//    forward ("MobileNetV2dilated/features.3.conv.0/conv2d") and "<module path>/<op>.backward" for a
//    backward (the autograd engine restores the module path the op was recorded under), so an
//    Nsight Systems timeline reads like the model; Range marks other regions ("loss",
//    "optimizer.step", "loader.wait"). NVTX is active when a tool is attached (Nsight Systems, or
//    any NVTX_INJECTION64_PATH library); otherwise no name is built.
//  * when set_device_timing(device) names a CUDA device, the profiler times each scope with CUDA
//    events on the current stream instead of the host clock (segtrain bench --device cuda:0), and
//    collect() waits for the device.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device.h"

namespace seg::prof {

void set_enabled(bool on);
bool enabled();
// Times scopes with CUDA events on `device`'s current stream (a CUDA device), or with the host clock
// (the CPU, the default).
void set_device_timing(Device device);

// The op scope running on this thread (null op outside any).
struct OpContext {
  const char* op = nullptr;
  const char* phase = nullptr;
};
OpContext current_op();

// The module path of the code running on this thread, "/"-separated ("MobileNetV2dilated/features.3.conv.0"):
// the ModuleScopes open on the thread, then the module of the last parameter an op noted. Built only
// while NVTX is active (empty otherwise: naming costs nothing when nobody listens).
std::string current_module_path();
// Ops with parameters (conv2d, batch_norm) note their parameter's name ("encoder.features.3.conv.0.weight"):
// its module ("features.3.conv.0", the component prefix dropped: a ModuleScope names it) names
// this op and the parameterless ops that follow it (relu after conv), until the next note.
void note_parameter(const std::string& parameter_name);
// Appends `name` to the thread's module path for a scope (models name their children with it).
class ModuleScope {
 public:
  explicit ModuleScope(const std::string& name);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  size_t previous_size_;
};
// Replaces the thread's module path for a scope (the autograd engine, running a recorded backward).
class ModulePathScope {
 public:
  explicit ModulePathScope(const std::string& path);
  ~ModulePathScope();
  ModulePathScope(const ModulePathScope&) = delete;
  ModulePathScope& operator=(const ModulePathScope&) = delete;

 private:
  std::string previous_;
};

// Whether NVTX ranges are emitted (CUDA builds with NVTX_INJECTION64_PATH set, i.e. a tool attached).
bool nvtx_active();
// An NVTX range around a region that is not an op ("loss", "optimizer.step", "loader.wait").
class Range {
 public:
  explicit Range(const char* name);
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  bool pushed_;
};

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
  bool pushed_ = false;     // an NVTX range was pushed
  const char* op_;
  const char* phase_;
  OpContext previous_;
  nlohmann::json args_;
  std::chrono::steady_clock::time_point start_;
  void* start_event_ = nullptr;  // a timing Event (core/stream.h) when timing on a device
};

}  // namespace seg::prof

#define SEG_PROF_CAT2(a, b) a##b
#define SEG_PROF_CAT(a, b) SEG_PROF_CAT2(a, b)
// SEG_PROFILE("conv2d", "forward", {{"x", shape}, ...}) : times the rest of the enclosing scope.
#define SEG_PROFILE(op, phase, ...) \
  ::seg::prof::Scope SEG_PROF_CAT(seg_prof_scope_, __LINE__)(op, phase, [&]() -> nlohmann::json { return __VA_ARGS__; })
