// Options of the simulator: environment defaults (read once) and set_options (sim.h).
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "kernels/sim/sim.h"

namespace seg::sim {

namespace detail {
// The stream executor restarts its random stream order from the seed and applies the host-access
// policy (stream_executor.cpp).
void options_changed(const Options& options);
}  // namespace detail

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

[[noreturn]] void bad_env(const char* name, const std::string& value, const char* expected) {
  throw std::invalid_argument(std::string("seg::sim: environment variable ") + name + "='" + value +
                              "' is not valid; expected " + expected);
}

long long env_integer(const char* name, long long fallback, long long lo, long long hi) {
  const std::string v = env(name);
  if (v.empty()) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (*end != '\0' || x < lo || x > hi)
    bad_env(name, v, ("an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]").c_str());
  return x;
}

Options from_environment() {
  Options o;
  const std::string schedule = env("SEG_SIM_SCHEDULE");
  if (schedule.empty() || schedule == "rr" || schedule == "round_robin") {
    o.schedule = Schedule::round_robin;
  } else if (schedule == "reverse") {
    o.schedule = Schedule::reverse;
  } else if (schedule == "random") {
    o.schedule = Schedule::random;
  } else {
    bad_env("SEG_SIM_SCHEDULE", schedule, "rr, reverse or random");
  }
  o.seed = static_cast<uint64_t>(env_integer("SEG_SIM_SEED", 1, 0, (1LL << 62)));
  o.workers = static_cast<int>(env_integer("SEG_SIM_WORKERS", 1, 1, 256));
  o.strict = env_integer("SEG_SIM_STRICT", 1, 0, 1) != 0;
  o.stack_bytes = static_cast<size_t>(env_integer("SEG_SIM_STACK_KB", 0, 0, 1 << 20)) * 1024;
  const std::string sw = env("SEG_SIM_SWITCH");
  if (sw.empty() || sw == "asm") {
    o.use_ucontext = false;
  } else if (sw == "ucontext") {
    o.use_ucontext = true;
  } else {
    bad_env("SEG_SIM_SWITCH", sw, "asm or ucontext");
  }
  o.verbose = env_integer("SEG_SIM_VERBOSE", 0, 0, 1) != 0;
  const std::string order = env("SEG_SIM_STREAM_ORDER");
  if (order.empty() || order == "fifo") {
    o.stream_order = StreamOrder::fifo;
  } else if (order == "random") {
    o.stream_order = StreamOrder::random;
  } else {
    bad_env("SEG_SIM_STREAM_ORDER", order, "fifo or random");
  }
  o.sync_launch = env_integer("SEG_SIM_SYNC_LAUNCH", 0, 0, 1) != 0;
  o.race_check = env_integer("SEG_SIM_RACE_CHECK", 1, 0, 1) != 0;
  o.host_access_faults = env_integer("SEG_SIM_HOST_FAULTS", 1, 0, 1) != 0;
  o.check_pointers = env_integer("SEG_SIM_CHECK_POINTERS", 1, 0, 1) != 0;
  const std::string profile = env("SEG_SIM_PROFILE");
  if (profile.empty() || profile == "0") {
    o.profile = ProfileOutput::none;
  } else if (profile == "1") {
    o.profile = ProfileOutput::each_launch;
  } else if (profile == "summary") {
    o.profile = ProfileOutput::summary;
  } else {
    bad_env("SEG_SIM_PROFILE", profile, "0, 1 or summary");
  }
  o.counters = o.profile != ProfileOutput::none;
  return o;
}

std::mutex g_mutex;
bool g_loaded = false;
Options g_options;

}  // namespace

Options options() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_loaded) {
    g_options = from_environment();
    g_loaded = true;
  }
  return g_options;
}

void set_options(const Options& o) {
  if (o.workers < 1) throw std::invalid_argument("seg::sim: Options::workers must be at least 1");
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_options = o;
    g_loaded = true;
  }
  detail::options_changed(o);
}

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::round_robin:
      return "rr";
    case Schedule::reverse:
      return "reverse";
    case Schedule::random:
      return "random";
  }
  return "?";
}

const char* stream_order_name(StreamOrder s) {
  switch (s) {
    case StreamOrder::fifo:
      return "fifo";
    case StreamOrder::random:
      return "random";
  }
  return "?";
}

const char* fault_kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::launch_config:
      return "invalid launch configuration";
    case FaultKind::deadlock:
      return "deadlock";
    case FaultKind::divergent_collective:
      return "divergent warp collective";
    case FaultKind::barrier_divergence:
      return "divergent __syncthreads";
    case FaultKind::inactive_lanes:
      return "shuffle from an inactive lane";
    case FaultKind::misaligned:
      return "misaligned address";
    case FaultKind::bad_argument:
      return "invalid argument";
    case FaultKind::fragment_mismatch:
      return "WMMA fragment depends on the lane";
    case FaultKind::shared_overrun:
      return "dynamic shared memory overrun";
    case FaultKind::out_of_bounds:
      return "out-of-bounds access";
    case FaultKind::bad_address:
      return "address in the wrong memory space";
    case FaultKind::use_after_free:
      return "use after free";
    case FaultKind::stack_overflow:
      return "stack overflow";
    case FaultKind::trap:
      return "trap";
    case FaultKind::stream_race:
      return "stream race";
    case FaultKind::peer_access:
      return "peer access not enabled";
    case FaultKind::stream_capture:
      return "not permitted during stream capture";
    case FaultKind::invalid_stream:
      return "invalid stream";
  }
  return "?";
}

}  // namespace seg::sim
