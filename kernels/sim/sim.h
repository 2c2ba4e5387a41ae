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
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/launch_error.h"

namespace seg::sim {

enum class Schedule {
  round_robin,  // threads run in index order; a thread that blocks goes to the back of the queue
  reverse,      // highest index first: shows reads of data that lower-numbered threads write late
  random,       // a seeded random pick among the runnable threads at every switch
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
  // Pointer checks of every load and store of kernel code (access_check.h). Only the default build
  // instruments kernel code; under ASan and TSan the setting has no effect.
  bool check_pointers = true;
  // Performance counters (counters.h), read with last_launch_counters(); `profile` also prints them.
  bool counters = false;
  ProfileOutput profile = ProfileOutput::none;
};

// The options used by the next launch (environment defaults until set_options is called).
Options options();
void set_options(const Options& options);
const char* schedule_name(Schedule schedule);

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

// Counters of the last launch made by the calling thread.
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
  peer_access,        // an access to another device's memory without peer access
  stack_overflow,     // a simulated thread's locals outgrew its stack (SEG_SIM_STACK_KB)
  trap,               // __trap() or an exception thrown by kernel code
};
const char* fault_kind_name(FaultKind kind);

// Thrown by SEG_LAUNCH when the simulator finds a fault. what() is the full report: kernel, launch
// site, block and thread, and what each thread was doing.
class KernelFault : public cuda::LaunchError {
 public:
  KernelFault(FaultKind kind, const std::string& report) : cuda::LaunchError(report), kind_(kind) {}
  FaultKind kind() const { return kind_; }

 private:
  FaultKind kind_;
};

}  // namespace seg::sim
