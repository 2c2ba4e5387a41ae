// Host-side control of the CUDA simulator: options, statistics and the fault type.
//
// The simulator (kernels/sim, overview in docs/cuda-simulator.md) runs kernels written in CUDA C++
// on the CPU: every CUDA thread of a block is a fiber, and blocks run one after another (or on
// worker threads). Host code normally never includes this header: SEG_LAUNCH and the CUDA runtime
// calls work unchanged. Tests use it to choose schedules, read statistics and inspect faults.
//
// Options start from environment variables, read once at the first launch:
//   SEG_SIM_SCHEDULE = rr | reverse | random   order in which runnable threads of a block run (rr)
//   SEG_SIM_SEED     = integer                 seed of the random schedule (1)
//   SEG_SIM_WORKERS  = N                       OS threads running blocks in parallel (1)
//   SEG_SIM_STRICT   = 1 | 0                   faults for undefined-but-often-working code (1)
//   SEG_SIM_STACK_KB = N                       stack of each simulated thread (256; 1024 under sanitizers)
//   SEG_SIM_SWITCH   = asm | ucontext          context switch implementation (asm on x86-64)
//   SEG_SIM_VERBOSE  = 1                       print statistics after every launch
//   SEG_SIM_CHECK_POINTERS = 1 | 0             check every access of kernel code (1; default build only)
//   SEG_SIM_PROFILE  = 1 | summary             collect the performance counters (counters.h) and print
//                                              a table per launch and totals at exit (1), or totals only
//   SEG_SIM_STREAM_ORDER = fifo | random        order of independent streams' work (fifo; seed: SEG_SIM_SEED)
//   SEG_SIM_SYNC_LAUNCH  = 0 | 1                run every launch at the call, for debugging (0)
//   SEG_SIM_RACE_CHECK   = 1 | 0                the stream race detector (1)
//   SEG_SIM_HOST_FAULTS  = 1 | 0                host dereferences of device memory fault (1)
//   SEG_SIM_DEVICES      = N                    number of simulated GPUs (1), read once
// Streams, events, devices and graphs behave as on a GPU: docs/cuda-simulator.md, "Streams".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/launch_error.h"

namespace seg::sim {

enum class Schedule {
  round_robin,  // threads run in index order; a thread that blocks goes to the back of the queue
  reverse,      // highest index first: shows reads of data that lower-numbered threads write late
  random,       // a seeded random pick among the runnable threads at every switch
};

enum class StreamOrder {
  fifo,    // the operation enqueued first runs first (what a GPU usually does)
  random,  // a seeded random pick among the operations whose dependencies are complete
};

enum class ProfileOutput {
  none,
  each_launch,  // a table per launch, and the totals per kernel at exit (SEG_SIM_PROFILE=1)
  summary,      // only the totals per kernel at exit (SEG_SIM_PROFILE=summary)
};

struct Options {
  Schedule schedule = Schedule::round_robin;
  uint64_t seed = 1;
  int workers = 1;
  // Strict mode turns undefined behaviour that happens to work on current GPUs into faults:
  // a __syncthreads that completes after some threads of the block exited, threads waiting at
  // different __syncthreads call sites, and shuffles that read a lane which did not take part
  // (exited, nonexistent in a partial warp, outside the mask: e.g. a full-mask reduction in a
  // block of 48 threads). Without it such reads return the poison value 0xFF.. and are counted.
  bool strict = true;
  size_t stack_bytes = 0;  // 0: the default for this build
  bool use_ucontext = false;
  bool verbose = false;
  // Streams (docs/cuda-simulator.md, "Streams and events"). Queued work runs at synchronisation
  // points; among the operations that may run next (independent streams), fifo takes the one
  // enqueued first, random a seeded random one (`seed`), so a missing cudaStreamWaitEvent shows
  // up as wrong results under some seeds.
  StreamOrder stream_order = StreamOrder::fifo;
  // Runs each SEG_LAUNCH (and the work it depends on) at the call, so a fault is thrown by the
  // launch itself, with the launcher on the stack.
  bool sync_launch = false;
  // The stream race detector: operations on different streams that touch the same bytes, one of
  // them writing, with nothing ordering them, are reported (FaultKind::stream_race).
  bool race_check = true;
  // Device allocations are inaccessible to host code (PROT_NONE, or ASan poison) except while the
  // simulator runs queued work, so a host dereference of a device pointer faults with a report.
  bool host_access_faults = true;
  // Pointer checks of every load and store of kernel code (access_check.h); with them the stream
  // race detector takes the bytes a kernel touched instead of whole allocations. Only the default
  // build instruments kernel code; under ASan and TSan the setting has no effect. Off, a launch
  // checks its pointer arguments instead (a stream-ordered free, another device's memory).
  bool check_pointers = true;
  // Performance counters (counters.h), read with last_launch_counters(); `profile` also prints them.
  bool counters = false;
  ProfileOutput profile = ProfileOutput::none;
};

// The options used by the next launch (environment defaults until set_options is called).
Options options();
void set_options(const Options& options);
const char* schedule_name(Schedule schedule);
const char* stream_order_name(StreamOrder order);

// Sets options for a scope and restores the previous ones (tests).
class ScopedOptions {
 public:
  explicit ScopedOptions(const Options& options) : saved_(sim::options()) { set_options(options); }
  ~ScopedOptions() { set_options(saved_); }
  ScopedOptions(const ScopedOptions&) = delete;
  ScopedOptions& operator=(const ScopedOptions&) = delete;

 private:
  Options saved_;
};

// Counters of the last launch made by the calling thread. Launches are queued: this waits until
// that launch has run (and throws its KernelFault, if any).
struct LaunchStats {
  uint64_t blocks = 0;
  uint64_t threads = 0;
  uint64_t context_switches = 0;
  uint64_t barriers = 0;             // completed __syncthreads (all variants)
  uint64_t warp_collectives = 0;     // completed shuffles, votes, __syncwarp, WMMA and PTX warp ops
  uint64_t inactive_lane_reads = 0;  // shuffle reads from lanes that did not take part (poisoned)
};
LaunchStats last_launch_stats();

// What went wrong, as a category tests can check (the message has the details).
enum class FaultKind {
  launch_config,         // grid/block/shared-memory request over the device limits
  deadlock,              // no thread can run but some have not finished
  divergent_collective,  // lanes of a warp disagree on a collective (op, mask, arguments)
  barrier_divergence,    // __syncthreads reached after exits or at different call sites (strict)
  inactive_lanes,     // a shuffle reads a lane that did not take part: exited, nonexistent, outside the mask (strict)
  misaligned,         // pointer or leading dimension breaks an alignment rule (WMMA, ldmatrix, cp.async)
  bad_argument,       // other invalid arguments (mask without the caller, bad width, ...)
  fragment_mismatch,  // lanes hold different WMMA fragments: code relies on the lane mapping
  shared_overrun,     // dynamic shared memory written beyond the launched size
  out_of_bounds,      // an access past the end (or before the start) of an allocation or static shared array
  bad_address,        // a pointer in the wrong memory space (a host pointer, cp.async from host memory)
  use_after_free,     // an access to a freed allocation
  peer_access,        // an access to another device's memory without peer access (cudaDeviceEnablePeerAccess)
  stack_overflow,     // a simulated thread's locals outgrew its stack (SEG_SIM_STACK_KB)
  trap,               // __trap() or an exception thrown by kernel code
  stream_race,        // two operations on different streams touch the same bytes, unordered (race detector)
  stream_capture,     // an operation SEG_LAUNCH cannot enqueue because of a stream capture
  invalid_stream,     // SEG_LAUNCH on a destroyed stream or one of another device
};
const char* fault_kind_name(FaultKind kind);

// Thrown when the simulator finds a fault. what() is the full report: kernel, launch site, block
// and thread, and what each thread was doing. Launches are queued (as on a GPU), so a fault found
// while running a kernel is thrown by the next call that synchronises with it, or by the next
// SEG_LAUNCH: cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, the synchronous
// copies (cudaMemcpy, ...). Calls made from destructors (cudaFree, cudaStreamDestroy, ...) never
// throw; they and the queries return the error code while the fault waits to be thrown. A bad
// launch configuration is thrown by SEG_LAUNCH at once. SEG_SIM_SYNC_LAUNCH=1 makes every fault
// come out of its SEG_LAUNCH.
class KernelFault : public cuda::LaunchError {
 public:
  KernelFault(FaultKind kind, const std::string& report) : cuda::LaunchError(report), kind_(kind) {}
  FaultKind kind() const { return kind_; }

 private:
  FaultKind kind_;
};

// ---- several devices -------------------------------------------------------------------------
// The number of simulated GPUs (SEG_SIM_DEVICES, default 1). Each has its own memory accounting,
// default stream, properties and peer-access set; every pair may enable peer access.
int device_count();
// Changes the number of devices. Throws std::logic_error while a device that would disappear
// holds memory or streams.
void set_device_count(int devices);

// Sets the device count for a scope (tests). Restoring it fails (a message on stderr) while a
// device that would disappear still holds memory or streams.
class ScopedDeviceCount {
 public:
  explicit ScopedDeviceCount(int devices) : saved_(device_count()) { set_device_count(devices); }
  ~ScopedDeviceCount();
  ScopedDeviceCount(const ScopedDeviceCount&) = delete;
  ScopedDeviceCount& operator=(const ScopedDeviceCount&) = delete;

 private:
  int saved_;
};

// ---- the stream race detector --------------------------------------------------------------------
// Races found since the start of the process (each also becomes a KernelFault of kind stream_race,
// thrown at the next synchronising call), and the report of the last one.
uint64_t stream_race_count();
std::string last_stream_race_report();

// A kernel's access set is, conservatively, the whole allocation behind each pointer argument.
// An allocator that carves many buffers out of one cudaMalloc (a caching allocator) can say where
// each buffer starts and ends; the detector then uses the buffer instead of the allocation.
void annotate_buffer(const void* begin, size_t bytes);
void forget_buffer(const void* begin);

// ---- NCCL --------------------------------------------------------------------------------------------
// How long a collective waits for ranks that have not called it, and ncclCommInitRank for ranks
// that have not joined, before failing (docs/cuda-simulator.md, "NCCL"). Default: the environment
// variable SEG_SIM_NCCL_TIMEOUT_S, else 60 s; seconds <= 0 restores the default.
void set_nccl_timeout(double seconds);

// ---- the op trace ----------------------------------------------------------------------------------
// The order in which queued work ran, for tests of overlap ("the all-reduce on the comm stream
// started before the last kernel on the compute stream"). Opt-in: nothing is recorded until
// start_op_trace(). Every op that does work is recorded (kernels, copies, memsets, frees, host
// functions, NCCL collectives: one entry per rank); event records and waits are not. `start` and
// `finish` are positions in one sequence of start and finish events (1, 2, ...), so a < b means
// "happened before" in the simulator's run; the members of one NCCL collective start together.
struct TracedOp {
  int device = 0;
  const void* stream = nullptr;  // the cudaStream_t it was queued on (the default streams: an internal object)
  uint64_t stream_id = 0;
  std::string description;  // as in reports: "kernel k launched at file:line", "ncclAllReduce(...) rank 0 of 2 ..."
  uint64_t start = 0;
  uint64_t finish = 0;  // 0: still running when the trace was taken
};
// Clears the trace and starts recording.
void start_op_trace();
// Stops recording and returns what was recorded, in start order.
std::vector<TracedOp> take_op_trace();

// ---- the profiler API -------------------------------------------------------------------------------
// cudaProfilerStart/Stop (cuda_profiler_api.h) open and close a profiler's capture range on a GPU
// (nsys --capture-range=cudaProfilerApi, ncu --profile-from-start off). The simulator has no
// profiler: it records the calls (kernels/sim/profiler_api.cpp), so a test can check which work a
// capture would hold.
struct ProfilerCall {
  bool start = false;          // cudaProfilerStart (true) or cudaProfilerStop
  bool was_capturing = false;  // a range was open before the call (a second start or stop has no effect)
  size_t unfinished_ops = 0;   // queued work not finished yet, every device (0 at a stop: the capture holds it all)
};
// Every call since the start of the process or reset_profiler_calls(), in call order.
std::vector<ProfilerCall> profiler_calls();
// Clears the record and closes the range.
void reset_profiler_calls();
// Whether a range is open (between a start and a stop).
bool profiler_capturing();
// Calls `listener` on the calling thread after each start or stop has taken effect (a test lines the
// calls up with its own records, e.g. the NVTX ranges pushed so far); an empty function removes it.
void set_profiler_listener(std::function<void(const ProfilerCall&)> listener);

}  // namespace seg::sim
