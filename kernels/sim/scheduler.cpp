// The block scheduler: runs the threads of one block as fibers until all have exited, implements
// __syncthreads, and explains faults and deadlocks.
//
// Scheduling is cooperative. A thread runs until it blocks (barrier, warp collective) or exits;
// then the next runnable thread is taken from the run queue (Options::schedule decides which) and
// the fiber switches to it directly. When the queue is empty the host fiber regains control: if
// every thread exited the block is done, otherwise nobody can ever run again -- a deadlock, which
// is reported with what every waiting thread waits for.
//
// Threads released together (by a barrier or a collective) are queued in index order (reverse
// order for the reverse schedule), the releasing thread included, so every phase between two
// barriers starts from the lowest (highest) thread.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "kernels/sim/builtins.h"
#include "kernels/sim/sanitizer_hooks.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

namespace {

thread_local std::unique_ptr<Worker> tls_worker;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "seg::sim: fatal: %s\n", what.c_str());
  std::abort();
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void activate(Worker& w, SimThread& t) {
  w.current = &t;
  threadIdx = t.tid;
  ++w.stats.context_switches;
}

bool same_site(const Where& a, const Where& b) {
  return a.line() == b.line() && a.column() == b.column() &&
         (a.file_name() == b.file_name() || std::strcmp(a.file_name(), b.file_name()) == 0);
}

const char* barrier_name(BarrierOp op) {
  switch (op) {
    case BarrierOp::sync:
      return "__syncthreads()";
    case BarrierOp::count:
      return "__syncthreads_count()";
    case BarrierOp::all:
      return "__syncthreads_and()";
    case BarrierOp::any:
      return "__syncthreads_or()";
  }
  return "?";
}

std::string range_text(unsigned a, unsigned b) {
  return a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b);
}

// Threads [first, last] of the block as "threads 3-9 (warp 0, lanes 3-9)".
std::string thread_range(unsigned first, unsigned last) {
  std::string s = (first == last ? "thread " : "threads ") + range_text(first, last);
  if (first / 32 == last / 32)
    s += " (warp " + std::to_string(first / 32) + ", lane" + (first == last ? " " : "s ") +
         range_text(first % 32, last % 32) + ")";
  return s;
}

[[noreturn]] void thread_main(void* arg);

void complete_barrier(Worker& w);

}  // namespace

// ---- workers ------------------------------------------------------------------------------------

Worker& this_worker() {
  if (!tls_worker) {
    tls_worker = std::make_unique<Worker>();
    tls_worker->host = Fiber::host();
  }
  return *tls_worker;
}

Worker* current_worker() { return tls_worker.get(); }

Worker& running_worker(const char* intrinsic) {
  Worker* w = tls_worker.get();
  if (!w || !w->current)
    die(std::string(intrinsic) + " called outside a simulated kernel (host code cannot call device intrinsics)");
  return *w;
}

unsigned RunQueue::pop(Schedule schedule, uint64_t& rng_state) {
  const size_t cap = buf_.size();
  if (schedule == Schedule::random && size_ > 1) {
    const unsigned k = static_cast<unsigned>(splitmix64(rng_state) % size_);
    std::swap(buf_[head_], buf_[(head_ + k) % cap]);
  }
  const unsigned t = buf_[head_];
  head_ = static_cast<unsigned>((head_ + 1) % cap);
  --size_;
  return t;
}

// ---- reports ------------------------------------------------------------------------------------

// Source paths in reports are relative to the repository. __FILE__ is absolute when CMake passes
// absolute paths, but relative to the build folder ("../../tests/sim/x.cu") when ccache rewrites
// them (its base_dir setting): both forms come out as "tests/sim/x.cu".
const char* relative_path(const char* file) {
#ifdef SEG_SIM_SOURCE_ROOT
  const size_t n = std::strlen(SEG_SIM_SOURCE_ROOT);
  if (std::strncmp(file, SEG_SIM_SOURCE_ROOT, n) == 0) return file + n;
#endif
  while (std::strncmp(file, "../", 3) == 0) file += 3;
  return file;
}

std::string describe_where(const Where& where) {
  return std::string(relative_path(where.file_name())) + ":" + std::to_string(where.line());
}

std::string lane_list(uint32_t lanes) {
  std::string s;
  for (unsigned i = 0; i < 32;) {
    if (!(lanes >> i & 1u)) {
      ++i;
      continue;
    }
    unsigned j = i;
    while (j + 1 < 32 && (lanes >> (j + 1) & 1u)) ++j;
    if (!s.empty()) s += ",";
    s += range_text(i, j);
    i = j + 1;
  }
  return s.empty() ? "none" : s;
}

std::string hex_mask(uint32_t mask) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", mask);
  return buf;
}

// snprintf rather than string concatenation: GCC 12 warns falsely (-Wrestrict) on the latter here.
std::string dim_text(unsigned x, unsigned y, unsigned z) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u,%u,%u)", x, y, z);
  return buf;
}
std::string dim_text(const dim3& d) { return dim_text(d.x, d.y, d.z); }
std::string dim_text(const uint3& d) { return dim_text(d.x, d.y, d.z); }

static std::string launch_context(const Worker& w) {
  const LaunchRequest& r = *w.launch->request;
  return std::string("kernel ") + r.kernel_name + " <<<grid " + dim_text(r.grid) + ", block " + dim_text(r.block) +
         ", " + std::to_string(r.dynamic_smem) + " B dynamic shared>>> launched at " + relative_path(r.file) + ":" +
         std::to_string(r.line);
}

std::string thread_context(const Worker& w, const SimThread& t) {
  return launch_context(w) + "\n  block " + dim_text(w.block.idx) + ", thread " + dim_text(t.tid) + " (warp " +
         std::to_string(t.warp) + ", lane " + std::to_string(t.lane) + ")";
}

namespace {
// Thrown by raise_fault: unwinds the faulting thread's stack up to thread_main, running the
// destructors of whatever the kernel and the runtime held (a report string, say), which would
// otherwise leak when the fiber is discarded.
struct AbandonThread {};
}  // namespace

[[noreturn]] void raise_fault(Worker& w, FaultKind kind, const std::string& report) {
  if (!w.current) die("raise_fault outside a simulated thread: " + report);
  BlockRun& b = w.block;
  b.faulted = true;
  b.fault_kind = kind;
  b.fault_report = report;
  w.fibers_need_reset = true;
  throw AbandonThread{};
}

void fault(FaultKind kind, const std::string& what, const Where& where) {
  Worker& w = running_worker("a device-side check");
  raise_fault(w, kind,
              std::string("seg::sim: ") + fault_kind_name(kind) + ": " + what + "\n  at " + describe_where(where) +
                  "\n  in " + thread_context(w, *w.current));
}

static std::string deadlock_report(const Worker& w) {
  const BlockRun& b = w.block;
  std::ostringstream out;
  out << "seg::sim: deadlock: no thread of block " << dim_text(b.idx) << " can continue; " << b.live << " of "
      << b.nthreads << " threads are waiting\n  in " << launch_context(w) << "\n";
  // Group consecutive threads that wait for the same thing at the same place.
  unsigned i = 0;
  while (i < b.nthreads) {
    const SimThread& t = *w.threads[i];
    if (t.state == ThreadState::exited) {
      ++i;
      continue;
    }
    unsigned j = i;
    while (j + 1 < b.nthreads) {
      const SimThread& u = *w.threads[j + 1];
      if (u.state != t.state || u.wait != t.wait || u.op != t.op || !same_site(u.where, t.where) ||
          (t.wait == WaitKind::warp && u.warp != t.warp))
        break;
      ++j;
    }
    out << "  " << thread_range(i, j) << " wait in ";
    if (t.wait == WaitKind::warp && t.op) {
      const WarpOp& op = *t.op;
      const WarpState& ws = b.warps[t.warp];
      out << t.wait_name << " (mask " << hex_mask(op.mask) << ") at " << describe_where(t.where);
      const uint32_t missing = op.mask & ~op.arrived & ws.exists & ~ws.exited;
      if (missing) out << "; lanes " << lane_list(missing) << " of warp " << t.warp << " never arrived";
    } else {
      out << t.wait_name << " at " << describe_where(t.where);
    }
    out << "\n";
    i = j + 1;
  }
  const unsigned exited = b.nthreads - b.live;
  if (exited) out << "  " << exited << " thread" << (exited == 1 ? " has" : "s have") << " exited\n";
  return out.str();
}

// ---- the life of a simulated thread ---------------------------------------------------------------

void switch_to_next(Worker& w, SimThread& me) {
  BlockRun& b = w.block;
  if (b.queue.empty()) {
    w.current = nullptr;
    switch_fiber(me.fiber, *w.host);
    return;
  }
  SimThread& next = *w.threads[b.queue.pop(w.launch->options.schedule, b.rng)];
  activate(w, next);
  if (&next != &me) switch_fiber(me.fiber, next.fiber);
}

// Queues threads released together: the lanes in `lanes` of `warp`, or every waiting thread of the
// block at the barrier. Index order, or reverse order for the reverse schedule.
void make_runnable_in_order(Worker& w, uint32_t lanes, unsigned warp, bool whole_block) {
  BlockRun& b = w.block;
  const bool reverse = w.launch->options.schedule == Schedule::reverse;
  const unsigned n = whole_block ? b.nthreads : 32;
  for (unsigned k = 0; k < n; ++k) {
    const unsigned i = reverse ? n - 1 - k : k;
    SimThread* t = nullptr;
    if (whole_block) {
      t = w.threads[i].get();
      if (t->state != ThreadState::waiting || t->wait != WaitKind::barrier) continue;
    } else {
      if (!(lanes >> i & 1u)) continue;
      t = w.threads[warp * 32 + i].get();
    }
    t->state = ThreadState::runnable;
    t->wait = WaitKind::none;
    b.queue.push(t->index);
  }
}

namespace {

void exit_thread(Worker& w, SimThread& me) {
  BlockRun& b = w.block;
  me.state = ThreadState::exited;
  me.wait = WaitKind::none;
  me.cp_async.clear();  // copies never waited for are dropped: nothing may read them
  --b.live;
  san::hb_release(&w.block_end_sync);
  warp_lane_exited(w, me);
  if (b.barrier_waiting > 0 && b.barrier_waiting == b.live) complete_barrier(w);
  switch_to_next(w, me);
}

void run_kernel_body(Worker& w) {
  std::string error;
  try {
    w.launch->request->invoker->run_thread();
    return;
  } catch (const AbandonThread&) {
    throw;
  } catch (const std::exception& e) {
    error = std::string("kernel code threw an exception: ") + e.what();
  } catch (...) {
    error = "kernel code threw an exception that is not a std::exception";
  }
  // Raised outside the handler: switching fibers inside a catch block would confuse the C++
  // runtime's per-thread record of caught exceptions.
  fault(FaultKind::trap, error, std::source_location::current());
}

// After a fault: hands control to the host for good (the fiber is discarded before reuse).
[[noreturn]] void park_abandoned(Worker& w, SimThread& me) {
  w.current = nullptr;
  san::hb_release(&w.block_end_sync);  // the host reads the report this thread wrote
  switch_fiber(me.fiber, *w.host);
  die("an abandoned simulated thread was resumed");
}

void thread_main(void* arg) {
  SimThread& me = *static_cast<SimThread*>(arg);
  for (;;) {
    Worker& w = *me.worker;
    san::hb_acquire(&w.block_start_sync);
    bool abandoned = false;
    try {
      run_kernel_body(w);
      exit_thread(w, me);  // returns when the thread is started again in a later block
    } catch (const AbandonThread&) {
      abandoned = true;
    }
    if (abandoned) park_abandoned(w, me);
  }
}

void complete_barrier(Worker& w) {
  BlockRun& b = w.block;
  if (w.launch->options.strict && b.live < b.nthreads) {
    std::string exited;
    unsigned shown = 0;
    for (unsigned i = 0; i < b.nthreads && shown < 8; ++i)
      if (w.threads[i]->state == ThreadState::exited) exited += (shown++ ? ", " : "") + std::to_string(i);
    raise_fault(w, FaultKind::barrier_divergence,
                std::string("seg::sim: divergent __syncthreads: ") + barrier_name(b.barrier_op) + " at " +
                    describe_where(b.barrier_where) + " is reached by " + std::to_string(b.live) + " threads, but " +
                    std::to_string(b.nthreads - b.live) + " threads of the block have exited (e.g. " + exited +
                    "). A barrier must be reached by every thread of the block; early returns before a barrier are "
                    "undefined behaviour (SEG_SIM_STRICT=0 accepts it, as current GPUs do)\n  in " +
                    launch_context(w) + ", block " + dim_text(b.idx));
  }
  int result = 0;
  switch (b.barrier_op) {
    case BarrierOp::sync:
      result = 0;
      break;
    case BarrierOp::count:
      result = b.barrier_true;
      break;
    case BarrierOp::all:
      result = b.barrier_true == static_cast<int>(b.barrier_waiting);
      break;
    case BarrierOp::any:
      result = b.barrier_true > 0;
      break;
  }
  for (unsigned i = 0; i < b.nthreads; ++i) {
    SimThread& t = *w.threads[i];
    if (t.state == ThreadState::waiting && t.wait == WaitKind::barrier) t.barrier_result = result;
  }
  make_runnable_in_order(w, 0, 0, true);
  b.barrier_waiting = 0;
  b.barrier_true = 0;
  ++b.barrier_generation;
  ++w.stats.barriers;
}

}  // namespace

int block_barrier(BarrierOp op, int predicate, const Where& where) {
  Worker& w = running_worker(barrier_name(op));
  SimThread& me = *w.current;
  BlockRun& b = w.block;
  if (b.barrier_waiting == 0) {
    b.barrier_op = op;
    b.barrier_where = where;
  } else if (w.launch->options.strict && (!same_site(b.barrier_where, where) || b.barrier_op != op)) {
    raise_fault(w, FaultKind::barrier_divergence,
                std::string("seg::sim: divergent __syncthreads: thread ") + std::to_string(me.index) + " waits at " +
                    barrier_name(op) + " " + describe_where(where) + " while other threads wait at " +
                    barrier_name(b.barrier_op) + " " + describe_where(b.barrier_where) +
                    "; all threads of a block must reach the same barrier (SEG_SIM_STRICT=0 accepts it)\n  in " +
                    thread_context(w, me));
  }
  ++b.barrier_waiting;
  b.barrier_true += predicate != 0;
  me.state = ThreadState::waiting;
  me.wait = WaitKind::barrier;
  me.wait_name = barrier_name(op);
  me.where = where;
  // Two sync objects alternate between barrier generations: a thread resuming late from barrier k
  // must not acquire what faster threads released on arriving at barrier k+1.
  char* sync = &w.barrier_sync[b.barrier_generation & 1u];
  san::hb_release(sync);
  if (b.barrier_waiting == b.live) complete_barrier(w);
  switch_to_next(w, me);
  san::hb_acquire(sync);
  return me.barrier_result;
}

unsigned lane_id() { return running_worker("the lane index").current->lane; }
uint32_t live_lanes_mask() {
  Worker& w = running_worker("__activemask");
  const WarpState& ws = w.block.warps[w.current->warp];
  return ws.exists & ~ws.exited;
}

// ---- the host side of a block ---------------------------------------------------------------------

void annotate_tls_guards_for_this_thread();  // tsan_tls_guards.cpp

void prepare_worker(Worker& w, LaunchState& launch) {
  annotate_tls_guards_for_this_thread();
  w.launch = &launch;
  w.stats = LaunchStats{};
  const unsigned n = launch.block_threads;
  // Fibers are kept from launch to launch (creating one costs an mmap, and about a millisecond
  // under TSan), one pool per switch implementation. They are started anew when there are too
  // few, when the stack size grew, or after a fault left them stuck mid-kernel.
  if (w.fibers_need_reset) w.threads.clear();
  if (!w.threads.empty() && w.threads[0]->fiber.impl() != launch.switch_impl) std::swap(w.threads, w.other_threads);
  if (!w.threads.empty() &&
      (w.threads[0]->fiber.stack_bytes() < launch.stack_bytes || w.threads[0]->fiber.impl() != launch.switch_impl))
    w.threads.clear();
  while (w.threads.size() < n) {
    auto t = std::make_unique<SimThread>();
    t->worker = &w;
    t->index = static_cast<unsigned>(w.threads.size());
    t->name = "simulated thread " + std::to_string(t->index);
    t->fiber.start(&thread_main, t.get(), launch.stack_bytes, launch.switch_impl, t->name.c_str());
    w.threads.push_back(std::move(t));
  }
  w.fibers_need_reset = false;
  const dim3 bd = launch.request->block;
  for (unsigned i = 0; i < n; ++i) {
    SimThread& t = *w.threads[i];
    t.tid = uint3{i % bd.x, (i / bd.x) % bd.y, i / (bd.x * bd.y)};
    t.warp = i / 32;
    t.lane = i % 32;
  }
  blockDim = bd;
  gridDim = launch.request->grid;
  w.smem.prepare(launch.request->dynamic_smem);
  w.block.warps.assign((n + 31) / 32, WarpState{});
  w.block.queue.reset(n);
}

void run_block(Worker& w, uint64_t linear) {
  LaunchState& launch = *w.launch;
  BlockRun& b = w.block;
  const dim3 grid = launch.request->grid;
  const unsigned n = launch.block_threads;
  b.linear = linear;
  b.idx = uint3{static_cast<unsigned>(linear % grid.x), static_cast<unsigned>((linear / grid.x) % grid.y),
                static_cast<unsigned>(linear / (static_cast<uint64_t>(grid.x) * grid.y))};
  blockIdx = b.idx;
  b.nthreads = n;
  b.live = n;
  b.barrier_waiting = 0;
  b.barrier_true = 0;
  b.barrier_generation = 0;
  b.faulted = false;
  b.fault_report.clear();
  // The schedule of a block depends only on the seed and the block index: reproducible, and the
  // same whichever worker runs the block.
  b.rng = launch.options.seed * 0x9E3779B97F4A7C15ull + linear;
  for (unsigned k = 0; k < b.warps.size(); ++k) {
    WarpState& ws = b.warps[k];
    const unsigned lanes = std::min(32u, n - 32 * k);
    ws.exists = lanes == 32 ? 0xFFFFFFFFu : (1u << lanes) - 1u;
    ws.exited = 0;
    for (WarpOp& op : ws.ops) op.phase = WarpOp::Phase::free;
  }
  const bool reverse = launch.options.schedule == Schedule::reverse;
  for (unsigned k = 0; k < n; ++k) {
    SimThread& t = *w.threads[reverse ? n - 1 - k : k];
    t.state = ThreadState::runnable;
    t.wait = WaitKind::none;
    t.op = nullptr;
    t.cp_async.clear();
    b.queue.push(t.index);
  }
  w.smem.begin_block();
  ++w.stats.blocks;
  w.stats.threads += n;

  // Happens-before for TSan: the previous block on this worker (and the host before the launch)
  // happen before this block; threads of this block are not ordered with each other by it.
  san::hb_acquire(&w.block_end_sync);
  san::hb_release(&w.block_start_sync);
  while (!b.faulted && !b.queue.empty()) {
    SimThread& t = *w.threads[b.queue.pop(launch.options.schedule, b.rng)];
    activate(w, t);
    switch_fiber(*w.host, t.fiber);
  }
  w.current = nullptr;
  san::hb_acquire(&w.block_end_sync);
  if (b.faulted || b.live > 0) {
    // The block is abandoned with threads stuck mid-kernel; whatever they did (reading the
    // launch's arguments on the launching thread's stack, say) must happen before the host goes
    // on. Each stopped after releasing one of these objects.
    san::hb_acquire(&w.yield_sync);
    for (char& sync : w.barrier_sync) san::hb_acquire(&sync);
    for (WarpState& ws : b.warps)
      for (WarpOp& op : ws.ops) san::hb_acquire(&op);
  }
  if (b.faulted) return;
  if (b.live > 0) {
    b.faulted = true;
    b.fault_kind = FaultKind::deadlock;
    b.fault_report = deadlock_report(w);
    w.fibers_need_reset = true;
    return;
  }
  if (const size_t bad = w.smem.overrun_bytes()) {
    b.faulted = true;
    b.fault_kind = FaultKind::shared_overrun;
    b.fault_report = "seg::sim: dynamic shared memory overrun: block " + dim_text(b.idx) + " wrote " +
                     std::to_string(bad) + " byte(s) past the " + std::to_string(w.smem.size) +
                     " bytes of dynamic shared memory given at launch\n  in " + launch_context(w);
  }
}

}  // namespace seg::sim::detail

namespace seg::sim::detail {

void yield_thread() {
  Worker& w = running_worker("__nanosleep");
  SimThread& me = *w.current;
  w.block.queue.push(me.index);    // stays runnable, behind the others
  san::hb_release(&w.yield_sync);  // acquired by the host only if the block is abandoned
  switch_to_next(w, me);
}

}  // namespace seg::sim::detail
