// Internal state of the simulator runtime: a launch, the block being run, its threads and warps,
// and the Worker (one per OS thread) that owns them. Only the runtime's .cpp files include this.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/sim/device_runtime.h"
#include "kernels/sim/fiber.h"
#include "kernels/sim/launch.h"
#include "kernels/sim/race_detector.h"
#include "kernels/sim/sim.h"

namespace seg::sim {
struct KernelCounters;  // counters.h
}  // namespace seg::sim

namespace seg::sim::detail {

struct Worker;
struct LaunchCounters;  // counters.cpp

// Everything the workers of one launch share. Read-only while blocks run, except the fault slot.
struct LaunchState {
  const LaunchRequest* request = nullptr;
  LaunchContext context;  // device and peer-access set (several devices)
  Options options;
  unsigned block_threads = 0;
  uint64_t total_blocks = 0;
  size_t stack_bytes = 0;
  SwitchImpl switch_impl = SwitchImpl::assembly;

  std::atomic<bool> failed{false};
  std::mutex mutex;  // guards fault and stats
  std::optional<KernelFault> fault;
  uint64_t fault_block = 0;
  LaunchStats stats;
  LaunchCounters* counters = nullptr;  // set when the launch is counted (counter_hooks.h)
  // The global bytes the kernel touched, when context.record_accesses (access_check.cpp): each
  // worker adds its own, merged, when it finishes (under `mutex`).
  std::vector<Access> touched;
};

// What a launch that ran hands back to the stream executor.
struct LaunchResult {
  LaunchStats stats;
  std::shared_ptr<const KernelCounters> counters;  // null unless the launch was counted
  std::vector<Access> touched;                     // LaunchContext::record_accesses: merged, sorted
};
// Runs every block of a launch now, on the calling thread (and the worker pool); throws its fault.
LaunchResult run_launch(const LaunchRequest& request, const LaunchContext& context);

enum class ThreadState : uint8_t { runnable, waiting, exited };
enum class WaitKind : uint8_t { none, barrier, warp };

// cp.async copies of one thread: each copy reads its source when issued and lands in shared memory
// only when a cp.async.wait_group that covers its group runs (ptx_emulation.cpp).
struct CpAsyncCopy {
  void* dst;
  uint8_t bytes;
  uint8_t data[16];
};
struct CpAsyncState {
  std::vector<CpAsyncCopy> copies;  // issued and not landed, oldest first
  std::vector<size_t> groups;       // committed groups: number of copies in each, oldest first
  size_t uncommitted = 0;           // copies at the end of `copies` not yet in a group
  void clear() {
    copies.clear();
    groups.clear();
    uncommitted = 0;
  }
};

struct WarpOp;

struct SimThread {
  Worker* worker = nullptr;
  unsigned index = 0;  // linear index in the block (x fastest)
  uint3 tid{};
  unsigned warp = 0, lane = 0;
  Fiber fiber;
  std::string name;  // for TSan reports
  ThreadState state = ThreadState::exited;
  WaitKind wait = WaitKind::none;
  const char* wait_name = "";
  Where where;
  int barrier_result = 0;
  WarpOp* op = nullptr;  // the collective it waits in or is resuming from
  CpAsyncState cp_async;
};

// A warp collective in progress. Life cycle: free -> pending (lanes arrive) -> completed (lanes
// resume one by one) -> free. A slot is reused only after every lane resumed from it, so each TSan
// happens-before edge (release on arrival, acquire on resume) belongs to one collective only.
struct WarpOp {
  enum class Phase : uint8_t { free, pending, completed } phase = Phase::free;
  const char* name = "";
  WarpOpComplete complete = nullptr;
  uint32_t mask = 0;
  uint32_t arrived = 0;
  uint32_t unresumed = 0;
  bool full_warp = false;
  const void* uniform = nullptr;  // the first lane's uniform arguments (on its stack)
  uint32_t uniform_bytes = 0;
  Where where;
  LaneArgs* lanes[32] = {};
};

struct WarpState {
  uint32_t exists = 0;  // lanes that exist (a partial last warp has fewer than 32)
  uint32_t exited = 0;
  std::array<WarpOp, 32> ops;  // 32 slots suffice: every busy slot holds at least one lane
};

// The fixed-capacity queue of runnable threads (each thread is in it at most once).
class RunQueue {
 public:
  void reset(unsigned capacity) {
    buf_.assign(capacity, 0);
    head_ = size_ = 0;
  }
  bool empty() const { return size_ == 0; }
  void push(unsigned t) {
    buf_[(head_ + size_) % buf_.size()] = t;
    ++size_;
  }
  // Round-robin and reverse take the head; random swaps a random element to the head first.
  unsigned pop(Schedule schedule, uint64_t& rng_state);

 private:
  std::vector<unsigned> buf_;
  unsigned head_ = 0, size_ = 0;
};

// The block a worker is running.
struct BlockRun {
  uint3 idx{};
  uint64_t linear = 0;
  unsigned nthreads = 0;
  unsigned live = 0;  // threads that have not exited
  // __syncthreads in progress
  unsigned barrier_waiting = 0;
  int barrier_true = 0;  // arrivals with a non-zero predicate
  BarrierOp barrier_op = BarrierOp::sync;
  Where barrier_where;
  unsigned barrier_generation = 0;  // parity picks the TSan sync object (see scheduler.cpp)
  std::vector<WarpState> warps;
  RunQueue queue;
  uint64_t rng = 0;
  // A fault found while running the block: the block is abandoned.
  bool faulted = false;
  FaultKind fault_kind = FaultKind::trap;
  std::string fault_report;
};

// Dynamic shared memory of one worker: a buffer that ends at a PROT_NONE guard page. The launched
// size is placed right below the guard (rounded up to 128 bytes), so any access past it faults or,
// in the rounding slack, is found by a canary check at the end of each block.
struct DynamicSmem {
  char* map = nullptr;
  size_t map_size = 0;
  char* guard = nullptr;  // first byte of the guard page
  char* base = nullptr;   // what seg::dynamic_smem returns for this launch
  size_t size = 0;        // launched bytes
  size_t span = 0;        // size rounded up to 128: [base, base + span) is accessible
  void prepare(size_t bytes);
  void begin_block();
  // Number of slack bytes the block changed (0 when none).
  size_t overrun_bytes() const;
  ~DynamicSmem();
};

// One per OS thread that runs blocks: the calling thread and each pool thread.
struct Worker {
  std::unique_ptr<Fiber> host;
  std::vector<std::unique_ptr<SimThread>> threads;        // the pool in use (one per thread index)
  std::vector<std::unique_ptr<SimThread>> other_threads;  // kept for the other switch implementation
  bool fibers_need_reset = false;                         // after a fault, fibers are stuck mid-kernel
  SimThread* current = nullptr;                           // the simulated thread running now (null on the host fiber)
  LaunchState* launch = nullptr;
  BlockRun block;
  DynamicSmem smem;
  LaunchStats stats;
  // TSan sync objects: block boundaries, the two alternating barrier generations, yields.
  char block_start_sync = 0, block_end_sync = 0, yield_sync = 0;
  char barrier_sync[2] = {0, 0};
};

// The worker of the calling OS thread (created on first use) / null if it has none yet.
Worker& this_worker();
Worker* current_worker();
// The worker whose simulated thread is running on this OS thread; dies with a clear message when
// a device intrinsic is called outside a kernel.
Worker& running_worker(const char* intrinsic);

// scheduler.cpp
void prepare_worker(Worker& w, LaunchState& launch);
void run_block(Worker& w, uint64_t linear_block);
void make_runnable_in_order(Worker& w, uint32_t lanes_or_all, unsigned warp, bool whole_block);
void switch_to_next(Worker& w, SimThread& me);
[[noreturn]] void raise_fault(Worker& w, FaultKind kind, const std::string& report);
std::string thread_context(const Worker& w, const SimThread& t);
// A source path relative to the repository (a suffix of `file`, so async-signal-safe).
const char* relative_path(const char* file);
std::string describe_where(const Where& where);  // "path:line"
std::string lane_list(uint32_t lanes);  // "0-15,20"
std::string hex_mask(uint32_t mask);    // "0xffff0000"
std::string dim_text(unsigned x, unsigned y, unsigned z);  // "(x,y,z)"
std::string dim_text(const dim3& d);
std::string dim_text(const uint3& d);

// warp_collective.cpp
void warp_lane_exited(Worker& w, SimThread& me);

}  // namespace seg::sim::detail
