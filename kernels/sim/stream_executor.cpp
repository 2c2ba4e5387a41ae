// The stream executor: queues ops on streams and runs them at synchronisation points (the model is
// described in stream_executor.h), keeps the pending faults, and the host threads' clocks.
#include "kernels/sim/stream_executor.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <unordered_set>

#include "kernels/sim/worker.h"

namespace seg::sim::detail {

namespace {

std::mutex g_mutex;
std::condition_variable g_cv;         // an op finished
std::map<uint64_t, OpPtr> g_pending;  // ops not yet done, by enqueue order
uint64_t g_seq = 0;
uint64_t g_time_ns = 0;  // simulated device time: the sum of the ops' run times
uint64_t g_rng = 1;      // StreamOrder::random
bool g_rng_seeded = false;
std::deque<KernelFault> g_faults;         // found, not yet thrown
constexpr size_t kMaxPendingFaults = 16;  // further ones are dropped (the first explain the rest)
std::mutex g_hosts_mutex;                 // guards g_hosts_clock (taken after g_mutex, never before)
VectorClock g_hosts_clock;                // join of every host thread's clock

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "seg::sim: fatal: %s\n", what.c_str());
  std::abort();
}

uint64_t next_random() {
  if (!g_rng_seeded) {
    g_rng = options().seed;
    g_rng_seeded = true;
  }
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A member of a joint op that has not failed: it runs with its peers (stream_executor.h).
Joint* live_joint(const Op& op) { return op.joint && op.joint->failure.empty() ? op.joint.get() : nullptr; }

bool deps_done(const Op& op) {
  for (const OpPtr& d : op.deps)
    if (d->state != Op::State::done) return false;
  return true;
}

// Whether a pending op may start: its dependencies are done, and for a member of a joint op every
// member is queued, pending and has its dependencies done.
bool ready(const Op& op) {
  const Joint* j = live_joint(op);
  if (!j) return deps_done(op);
  if (j->members.size() < j->expected) return false;
  for (const OpPtr& m : j->members)
    if (m->state != Op::State::pending || !deps_done(*m)) return false;
  return true;
}

// What running `targets` needs now.
struct Needed {
  std::vector<Op*> runnable;     // pending ops that may start, by enqueue order
  bool busy = false;             // some needed op runs on another thread
  std::vector<Joint*> waiting;   // joint ops still missing members
  std::vector<Joint*> blocked;   // complete joint ops whose members' dependencies are not done
};

// The pending ops `targets` need (themselves and, transitively, their pending dependencies, and for
// a joint op its peers' dependencies); the runnable ones among them sorted by enqueue order.
Needed needed_by(const std::vector<OpPtr>& targets) {
  Needed n;
  std::unordered_set<Op*> seen;
  std::unordered_set<Joint*> joints;
  std::vector<Op*> stack;
  auto visit = [&](Op* op) {
    if (op->state != Op::State::done && seen.insert(op).second) stack.push_back(op);
  };
  for (const OpPtr& t : targets)
    if (t && t->seq != 0) visit(t.get());
  while (!stack.empty()) {
    Op* op = stack.back();
    stack.pop_back();
    if (op->state == Op::State::running) {
      n.busy = true;
      continue;
    }
    Joint* j = live_joint(*op);
    if (!j) {
      bool ok = true;
      for (const OpPtr& d : op->deps) {
        if (d->state == Op::State::done) continue;
        ok = false;
        visit(d.get());
      }
      if (ok) n.runnable.push_back(op);
      continue;
    }
    if (!joints.insert(j).second) continue;
    for (const OpPtr& m : j->members) seen.insert(m.get());
    for (const OpPtr& m : j->members)
      for (const OpPtr& d : m->deps) visit(d.get());
    if (j->members.size() < j->expected)
      n.waiting.push_back(j);
    else if (ready(*op))
      n.runnable.push_back(op);
    else
      n.blocked.push_back(j);
  }
  std::sort(n.runnable.begin(), n.runnable.end(), [](const Op* a, const Op* b) { return a->seq < b->seq; });
  return n;
}

// Every pending op that may start, of any stream or device, by enqueue order.
std::vector<Op*> all_runnable() {
  std::vector<Op*> runnable;
  for (const auto& [seq, op] : g_pending)
    if (op->state == Op::State::pending && ready(*op)) runnable.push_back(op.get());
  return runnable;
}

// ---- the op trace (sim.h) -------------------------------------------------------------------------
bool g_tracing = false;
uint64_t g_trace_clock = 0;
std::vector<TracedOp> g_trace;
std::map<const Op*, size_t> g_trace_open;  // running ops -> their entry

void trace_start(const Op& op) {
  if (!g_tracing || op.op_class() == Op::Class::marker) return;
  TracedOp t;
  t.device = op.device;
  t.stream = op.stream_handle;
  t.stream_id = op.stream_id;
  t.description = op.describe();
  t.start = ++g_trace_clock;
  g_trace_open[&op] = g_trace.size();
  g_trace.push_back(std::move(t));
}

void trace_finish(const Op& op) {
  auto it = g_trace_open.find(&op);
  if (it == g_trace_open.end()) return;
  if (it->second < g_trace.size()) g_trace[it->second].finish = ++g_trace_clock;
  g_trace_open.erase(it);
}

// The race detector's verdict on an op whose accesses are known before it runs.
std::optional<std::string> check_before_run(const Op& op) {
  std::vector<Access> accesses;
  op.accesses(accesses);
  if (accesses.empty()) return std::nullopt;
  AccessOwner owner{op.component, op.clock.get(op.component), &op.clock, nullptr};
  owner.label = std::make_shared<const AccessLabel>(AccessLabel{op.describe(), stream_text(op)});
  return check_accesses(owner, accesses, op.conservative_accesses());
}

// An op has run (lock held).
void finish(const OpPtr& op, bool skipped) {
  op->time_ns = g_time_ns;
  op->state = Op::State::done;
  op->cancelled = skipped;
  op->deps.clear();
  g_pending.erase(op->seq);
  trace_finish(*op);
}

void run_guarded(const std::function<void(OpRun&)>& body, OpRun& run, const std::string& what) {
  try {
    body(run);
  } catch (const KernelFault& f) {
    run.fault = f;
  } catch (const std::exception& e) {
    run.fault.emplace(FaultKind::trap, "seg::sim: " + what + " threw an exception: " + e.what());
  } catch (...) {
    run.fault.emplace(FaultKind::trap, "seg::sim: " + what + " threw an exception");
  }
}

uint64_t nanoseconds_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

// Runs one op (lock held on entry and exit, released while it runs).
void execute(Lock& lock, const OpPtr& op) {
  op->state = Op::State::running;
  trace_start(*op);
  const bool skip = device_state(op->device).faulted && op->op_class() != Op::Class::marker;
  const Options o = options();
  lock.unlock();

  OpRun run;
  std::optional<std::string> race;
  uint64_t elapsed = 0;
  if (!skip) {
    if (op->op_class() == Op::Class::device) open_device_memory();
    if (op->op_class() == Op::Class::host) close_device_memory();
    const bool after = op->accesses_known_after_run();
    if (o.race_check && op->op_class() == Op::Class::device && !after) race = check_before_run(*op);
    const auto t0 = std::chrono::steady_clock::now();
    run_guarded([&](OpRun& r) { op->execute(r); }, run, op->describe());
    elapsed = nanoseconds_since(t0);
    if (after && o.race_check && !run.fault) {
      std::vector<Access> accesses;
      op->accesses(accesses);
      if (!accesses.empty()) {
        AccessOwner owner{op->component, op->clock.get(op->component), &op->clock, nullptr};
        owner.label = std::make_shared<const AccessLabel>(AccessLabel{op->describe(), stream_text(*op)});
        race = check_accesses(owner, accesses, false);
      }
    }
  }

  lock.lock();
  g_time_ns += elapsed + 1;  // +1: events later in stream order are never earlier
  finish(op, skip);
  // The race first: it usually explains the fault (a kernel running after a free it raced with).
  if (race) record_fault(KernelFault(FaultKind::stream_race, *race), op->device, false);
  if (run.fault) record_fault(*run.fault, op->device, true);
  g_cv.notify_all();
}

// Runs every member of a ready joint op as one, on this thread (lock held on entry and exit).
void execute_joint(Lock& lock, const std::shared_ptr<Joint>& joint) {
  const std::vector<OpPtr> members = joint->members;
  joint->started = true;
  bool skip = false;
  for (const OpPtr& m : members) {
    m->state = Op::State::running;
    trace_start(*m);
    skip = skip || device_state(m->device).faulted;
  }
  const Options o = options();
  lock.unlock();

  OpRun run;
  std::vector<std::pair<int, std::string>> races;
  uint64_t elapsed = 0;
  if (!skip) {
    open_device_memory();
    if (o.race_check)
      for (const OpPtr& m : members)
        if (std::optional<std::string> r = check_before_run(*m)) races.emplace_back(m->device, *r);
    const auto t0 = std::chrono::steady_clock::now();
    run_guarded([&](OpRun& r) { joint->run(r); }, run, members.front()->describe());
    elapsed = nanoseconds_since(t0);
  }

  lock.lock();
  g_time_ns += elapsed + 1;
  for (const OpPtr& m : members) finish(m, skip);
  for (const auto& [device, report] : races) record_fault(KernelFault(FaultKind::stream_race, report), device, false);
  if (run.fault) record_fault(*run.fault, members.front()->device, true);
  joint->members.clear();  // the members and the joint op no longer keep each other alive
  g_cv.notify_all();
}

// A joint op none of whose members can ever start: some member's stream predecessors wait for the
// joint op itself (through an event or the legacy stream).
std::string cycle_message(const Joint& j) {
  std::string text = "seg::sim: a collective can never start (a GPU would hang): ";
  bool first = true;
  for (const OpPtr& m : j.members) {
    if (deps_done(*m)) continue;
    text += std::string(first ? "" : "; ") + m->describe() + " waits for earlier work that itself waits for this collective";
    first = false;
  }
  return text + " (a missing or misplaced cudaStreamWaitEvent, or work queued on the legacy default stream?)";
}

// One step toward `targets`: false when nothing could run (done, or waiting on another thread).
bool step(Lock& lock, const std::vector<OpPtr>& targets, bool wait_for_others) {
  const Needed n = needed_by(targets);
  if (n.runnable.empty()) {
    if (!n.waiting.empty()) {
      // Another host thread may still queue the missing members; real NCCL would spin forever
      // if none does, the simulator gives up after the joint op's timeout.
      const auto now = std::chrono::steady_clock::now();
      auto deadline = std::chrono::steady_clock::time_point::max();
      for (Joint* j : n.waiting) {
        if (j->waiting_since == std::chrono::steady_clock::time_point{}) j->waiting_since = now;
        const auto d = j->waiting_since + j->timeout();
        if (d <= now) {
          fail_joint(*j, j->timeout_message());
          return true;
        }
        deadline = std::min(deadline, d);
      }
      if (wait_for_others) g_cv.wait_until(lock, deadline);
      return false;
    }
    if (n.busy) {
      if (wait_for_others) g_cv.wait(lock);
      return false;
    }
    if (!n.blocked.empty()) {
      for (Joint* j : n.blocked) fail_joint(*j, cycle_message(*j));
      return true;
    }
    if (!all_done(targets)) die("queued work that cannot run (an op depends on a later one)");
    return false;
  }
  Op* pick = n.runnable.front();
  if (options().stream_order == StreamOrder::random) {
    // A GPU starts independent work as soon as it is queued, so any runnable op may go first,
    // also one the host is not waiting for: a missing cudaStreamWaitEvent, or a missing host
    // synchronisation, then gives wrong results under some seeds.
    const std::vector<Op*> any = all_runnable();
    pick = any[next_random() % any.size()];
  }
  const OpPtr op = g_pending.at(pick->seq);
  if (live_joint(*op))
    execute_joint(lock, op->joint);
  else
    execute(lock, op);
  return true;
}

}  // namespace

void options_changed(const Options& o) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_rng = o.seed;
    g_rng_seeded = true;
  }
  apply_host_access_policy();
}

Lock runtime_lock() { return Lock(g_mutex); }

HostThread& host_thread() {
  thread_local HostThread h;
  if (!h.joined) {
    // A thread's first call: it was started by code that knew what the other threads had
    // synchronised with (the simulator cannot see thread creation), so it starts from there.
    std::lock_guard<std::mutex> lock(g_hosts_mutex);
    h.clock = g_hosts_clock;
    h.joined = true;
  }
  return h;
}

uint32_t new_component() {
  static uint32_t next = 0;
  return ++next;
}

std::string stream_text(const Op& op) {
  char buf[96];
  switch (static_cast<CUstream_st::Kind>(op.stream_kind)) {
    case CUstream_st::Kind::legacy:
      std::snprintf(buf, sizeof buf, "the legacy default stream (device %d)", op.device);
      break;
    case CUstream_st::Kind::per_thread:
      std::snprintf(buf, sizeof buf, "a per-thread default stream (device %d)", op.device);
      break;
    default:
      std::snprintf(buf, sizeof buf, "stream %p (device %d)", op.stream_handle, op.device);
  }
  return buf;
}

cudaError_t capture_conflict(CUstream_st& s) {
  if (s.kind != CUstream_st::Kind::legacy) return cudaSuccess;
  // The legacy stream waits for every blocking stream of its device: a capturing one would make
  // captured work a dependency of real work.
  cudaError_t result = cudaSuccess;
  for (CUstream_st* b : device_state(s.device).blocking) {
    if (!b->capture) continue;
    invalidate(*b->capture, cudaErrorStreamCaptureImplicit);
    result = cudaErrorStreamCaptureImplicit;
  }
  return result;
}

cudaError_t submit(CUstream_st& s, const OpPtr& op, const Submit& how) {
  HostThread& h = host_thread();
  if (h.in_host_function) return cudaErrorNotPermitted;
  if (s.capture) return capture_op(s, op);
  if (const cudaError_t e = capture_conflict(s); e != cudaSuccess) return e;
  DeviceState& dev = device_state(s.device);
  std::vector<OpPtr> candidates = how.extra_deps;
  if (how.in_stream_order) {
    if (s.tail) candidates.push_back(s.tail);
    if (s.kind == CUstream_st::Kind::legacy) {
      for (CUstream_st* b : dev.blocking)
        if (b->tail) candidates.push_back(b->tail);
    } else if (s.blocking() && dev.legacy && dev.legacy->tail) {
      candidates.push_back(dev.legacy->tail);
    }
  }
  op->component = how.component ? how.component : s.component;
  op->clock = h.clock;
  for (const OpPtr& c : candidates) op->clock.join(c->clock);
  op->clock.set(op->component, op->clock.get(op->component) + 1);
  for (const OpPtr& c : candidates)
    if (c->state != Op::State::done && std::find(op->deps.begin(), op->deps.end(), c) == op->deps.end())
      op->deps.push_back(c);
  op->seq = ++g_seq;
  op->device = s.device;
  op->stream_id = s.id;
  op->stream_handle = &s;
  op->stream_kind = static_cast<uint8_t>(s.kind);
  g_pending.emplace(op->seq, op);
  if (how.in_stream_order && how.becomes_tail) s.tail = op;
  if (live_joint(*op)) {
    op->joint->members.push_back(op);
    g_cv.notify_all();  // a sync may be waiting for this member
  }
  return cudaSuccess;
}

void fail_joint(Joint& joint, const std::string& message) {
  if (!joint.failure.empty() || joint.started) return;
  joint.failure = message;
  joint.members.clear();
  joint.on_failure(message);
  g_cv.notify_all();
}

// Ops never enqueued (graph node prototypes, seq 0) are not waited for.
bool all_done(const std::vector<OpPtr>& ops) {
  for (const OpPtr& op : ops)
    if (op && op->seq != 0 && op->state != Op::State::done) return false;
  return true;
}

void run_until(Lock& lock, const std::vector<OpPtr>& targets) {
  if (host_thread().in_host_function) return;  // the caller reports cudaErrorNotPermitted
  while (!all_done(targets)) step(lock, targets, true);
  close_device_memory();
}

void run_one_toward(Lock& lock, const std::vector<OpPtr>& targets) {
  if (host_thread().in_host_function) return;
  step(lock, targets, false);
  close_device_memory();
}

std::vector<OpPtr> pending_ops(int device) {
  std::vector<OpPtr> ops;
  for (const auto& [seq, op] : g_pending)
    if (device < 0 || op->device == device) ops.push_back(op);
  return ops;
}

void host_acquire(const std::vector<OpPtr>& ops) {
  HostThread& h = host_thread();
  for (const OpPtr& op : ops)
    if (op) h.clock.join(op->clock);
  std::lock_guard<std::mutex> lock(g_hosts_mutex);
  g_hosts_clock.join(h.clock);
}

}  // namespace seg::sim::detail

namespace seg::sim {

void start_op_trace() {
  detail::Lock lock = detail::runtime_lock();
  detail::g_trace.clear();
  detail::g_trace_open.clear();
  detail::g_tracing = true;
}

std::vector<TracedOp> take_op_trace() {
  detail::Lock lock = detail::runtime_lock();
  detail::g_tracing = false;
  detail::g_trace_open.clear();
  std::vector<TracedOp> trace;
  trace.swap(detail::g_trace);
  return trace;
}

}  // namespace seg::sim

namespace seg::sim::detail {

void record_fault(const KernelFault& fault, int device, bool stops_device) {
  if (g_faults.size() < kMaxPendingFaults) g_faults.push_back(fault);
  if (stops_device) device_state(device).faulted = true;
}

void throw_pending_fault() {
  if (g_faults.empty()) return;
  const KernelFault f = g_faults.front();
  g_faults.pop_front();
  if (g_faults.empty())
    for (int d = 0; d < kMaxDevices; ++d)
      if (valid_device(d)) device_state(d).faulted = false;
  throw f;
}

cudaError_t pending_fault_error() {
  for (const KernelFault& f : g_faults)
    if (const cudaError_t e = error_code_of(f.kind()); e != cudaSuccess) return e;
  return cudaSuccess;
}

cudaError_t error_code_of(FaultKind kind) {
  switch (kind) {
    case FaultKind::stream_race:
      return cudaSuccess;  // a report of the simulator, not an error a GPU returns
    case FaultKind::launch_config:
      return cudaErrorInvalidConfiguration;
    case FaultKind::deadlock:
      return cudaErrorLaunchTimeout;
    case FaultKind::misaligned:
      return cudaErrorMisalignedAddress;
    case FaultKind::out_of_bounds:
    case FaultKind::bad_address:
    case FaultKind::shared_overrun:
    case FaultKind::peer_access:
      return cudaErrorIllegalAddress;
    case FaultKind::stream_capture:
      return cudaErrorStreamCaptureInvalidated;
    case FaultKind::invalid_stream:
      return cudaErrorInvalidResourceHandle;
    default:
      return cudaErrorLaunchFailure;
  }
}

// ---- reports: code addresses ---------------------------------------------------------------------

std::string describe_code_address(const void* address) {
  if (!address) return "unknown code";
  static std::mutex cache_mutex;
  static std::map<const void*, std::string> cache;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    if (auto it = cache.find(address); it != cache.end()) return it->second;
  }
  std::string text;
  Dl_info info;
  // The return address points after the call; one byte back is inside it.
  const auto* inside = static_cast<const char*>(address) - 1;
  if (dladdr(inside, &info) && info.dli_fname) {
    // The main executable may be named by how it was started (even "/proc/self/exe"): its real path.
    char exe[1024];
    if (!std::strchr(info.dli_fname, '/') || std::strcmp(info.dli_fname, "/proc/self/exe") == 0) {
      const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
      if (n > 0) {
        exe[n] = '\0';
        info.dli_fname = exe;
      }
    }
    const auto offset = static_cast<unsigned long>(inside - static_cast<const char*>(info.dli_fbase));
    char cmd[1200];
    std::snprintf(cmd, sizeof cmd, "addr2line -f -C -e '%s' 0x%lx 2>/dev/null", info.dli_fname, offset);
    std::string function, line;
    if (FILE* p = popen(cmd, "r")) {
      char buf[1024];
      if (std::fgets(buf, sizeof buf, p)) function = buf;
      if (std::fgets(buf, sizeof buf, p)) line = buf;
      pclose(p);
    }
    auto trim = [](std::string& s) {
      while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    };
    trim(function);
    trim(line);
    const char* base = std::strrchr(info.dli_fname, '/');
    char where[256];
    std::snprintf(where, sizeof where, "%s+0x%lx", base ? base + 1 : info.dli_fname, offset);
    if (!function.empty() && function != "??") {
      text = function;
      if (!line.empty() && line.rfind("??", 0) != 0) {
        const size_t colon = line.find(':');
        const std::string file = line.substr(0, colon), number = line.substr(colon + 1);
        text += std::string(" (") + relative_path(file.c_str());
        // No line number without debug information: the file only.
        if (!number.empty() && number[0] != '?') text += ":" + number.substr(0, number.find(' '));
        text += ")";
      } else {
        text += std::string(" (") + where + ")";
      }
    } else {
      text = where;
    }
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", address);
    text = buf;
  }
  std::lock_guard<std::mutex> lock(cache_mutex);
  cache[address] = text;
  return text;
}

}  // namespace seg::sim::detail
