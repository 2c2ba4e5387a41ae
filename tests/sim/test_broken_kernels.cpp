// The simulator (or, where noted, the sanitizer of this build) catches each deliberately broken
// kernel of bug_catalogue.cpp. Each bug runs in a child process: some end it (SIGSEGV, ASan,
// UBSan), and TSan's reports would fail this process. What each build catches is the table in
// docs/cuda-simulator.md; these cases pin it down.
#include "tests/sim/bug_catalogue.h"
#include "tests/sim/sim_test_util.h"

using simtest::run_bug;

namespace {

const char* const kDeadlock = "fault:deadlock";
const char* const kDivergentBarrier = "fault:divergent __syncthreads";
const char* const kInactiveLanes = "fault:shuffle from an inactive lane";
const char* const kDivergentCollective = "fault:divergent warp collective";
const char* const kBadArgument = "fault:invalid argument";
const char* const kMisaligned = "fault:misaligned address";
const char* const kFragment = "fault:WMMA fragment depends on the lane";
const char* const kBadAddress = "fault:address in the wrong memory space";
const char* const kOutOfBounds = "fault:out-of-bounds access";
const char* const kSharedOverrun = "fault:dynamic shared memory overrun";
const char* const kUseAfterFree = "fault:use after free";

void expect_outcome(const char* bug, const std::vector<std::string>& env, const std::string& outcome) {
  const simtest::BugRun r = run_bug(bug, env);
  INFO("bug: " << std::string(bug) << "\n" << r.output);
  CHECK(r.outcome == outcome);
}

// The outcome, and a report that says `text` and names the kernel's source file `where`.
void expect_report(const char* bug, const std::vector<std::string>& env, const std::string& outcome, const char* text,
                   const char* where) {
  const simtest::BugRun r = run_bug(bug, env);
  INFO("bug: " << std::string(bug) << "\n" << r.output);
  CHECK(r.outcome == outcome);
  CHECK(r.caught_by(text));
  CHECK(r.caught_by(where));
}

// The child died (a signal, or a sanitizer's non-zero exit) after printing `report` (the
// simulator's SIGSEGV explanation or a sanitizer report) and `where` (the kernel's file or name).
void expect_crash(const char* bug, const std::vector<std::string>& env, const char* report, const char* where) {
  const simtest::BugRun r = run_bug(bug, env);
  INFO("bug: " << std::string(bug) << "\n" << r.output);
  CHECK(r.outcome.empty());  // it never got to print an outcome
  CHECK((r.exit_code != 0 || r.signal != 0));
  CHECK(r.caught_by(report));
  CHECK(r.caught_by(where));
}

#if SEG_SIM_TEST_TSAN
void expect_race(const char* bug, const std::vector<std::string>& env, const char* file) {
  const simtest::BugRun r = run_bug(bug, env);
  INFO("bug: " << std::string(bug) << "\n" << r.output);
  CHECK(r.caught_by("WARNING: ThreadSanitizer: data race"));
  CHECK(r.caught_by(file));
  CHECK(r.exit_code == 66);  // TSan's exit code when it reported
}
#endif

const std::vector<std::string> kReverse = {"SEG_SIM_SCHEDULE=reverse"};
std::vector<std::string> random_seed(int seed) {
  return {"SEG_SIM_SCHEDULE=random", "SEG_SIM_SEED=" + std::to_string(seed)};
}

}  // namespace

TEST_CASE("sim catches: missing __syncthreads (three shapes)") {
#if SEG_SIM_TEST_TSAN
  // TSan sees the race whatever the schedule, also where the results happen to be right.
  for (const char* bug :
       {"warp_sums_no_barrier", "tree_no_barrier", "staging_no_trailing_barrier", "half_tile_no_barrier"}) {
    expect_race(bug, {}, "broken_barriers.cu");
    expect_race(bug, kReverse, "broken_barriers.cu");
  }
#else
  // Round-robin runs each phase from thread 0 upwards: reads of data that higher threads write
  // later in the same phase see stale values. The reverse schedule misses exactly those, and the
  // random schedule catches all three with every seed tried.
  for (const char* bug : {"warp_sums_no_barrier", "tree_no_barrier", "staging_no_trailing_barrier"}) {
    expect_outcome(bug, {}, "wrong");
    for (int seed = 1; seed <= 5; ++seed) expect_outcome(bug, random_seed(seed), "wrong");
  }
  expect_outcome("warp_sums_no_barrier", kReverse, "correct");
  expect_outcome("tree_no_barrier", kReverse, "correct");
  expect_outcome("staging_no_trailing_barrier", kReverse, "wrong");
  expect_outcome("half_tile_no_barrier", {}, "wrong");
#endif
}

TEST_CASE("sim catches: divergent __syncthreads in strict mode") {
  expect_outcome("early_return_before_barrier", {}, kDivergentBarrier);
  expect_outcome("barriers_different_sites", {}, kDivergentBarrier);
  // What current GPUs do with it, and what SEG_SIM_STRICT=0 accepts.
  expect_outcome("early_return_before_barrier", {"SEG_SIM_STRICT=0"}, "correct");
  expect_outcome("barriers_different_sites", {"SEG_SIM_STRICT=0"}, "correct");
}

TEST_CASE("sim catches: out-of-bounds global memory access") {
#if SEG_SIM_TEST_ASAN
  expect_crash("read_past_end", {}, "heap-buffer-overflow", "broken_memory.cu");
  expect_crash("write_past_end", {}, "heap-buffer-overflow", "broken_memory.cu");
#elif SEG_SIM_TEST_INSTRUMENTED
  // The pointer checks stop the thread at the access, with the line, the allocation and its owner.
  for (const auto& env : {std::vector<std::string>{}, kReverse, random_seed(1)}) {
    expect_report("read_past_end", env, kOutOfBounds,
                  "4-byte load from 0x", "at tests/sim/broken_memory.cu:12");
    expect_report("read_past_end", env, kOutOfBounds, "is 0 bytes past the end of a 4096-byte device allocation",
                  "in kernel read_one_past_the_end_kernel");
    expect_report("write_past_end", env, kOutOfBounds,
                  "4-byte store to 0x", "is 0 bytes past the end of a 4000-byte device allocation");
  }
  // A read into the rounding slack reads poison (NaN) without the checks; here it is stopped.
  expect_report("read_past_end_slack", {}, kOutOfBounds, "is 0 bytes past the end of a 4000-byte device allocation",
                "allocated by simtest::DeviceBuffer<float>::DeviceBuffer");
  // With the checks off, the old safety nets remain: the guard page and the slack canary.
  expect_crash("read_past_end", {"SEG_SIM_CHECK_POINTERS=0"},
               "4096 bytes after the start of a 4096-byte device allocation: an access past its end",
               "in kernel read_one_past_the_end_kernel launched at tests/sim/broken_memory.cu");
  expect_outcome("write_past_end", {"SEG_SIM_CHECK_POINTERS=0"}, kOutOfBounds);
  expect_outcome("read_past_end_slack", {"SEG_SIM_CHECK_POINTERS=0"}, "wrong");
#else
  // The allocation ends at a guard page: the read faults and the handler names the allocation.
  expect_crash("read_past_end", {},
               "4096 bytes after the start of a 4096-byte device allocation: an access past its end",
               "in kernel read_one_past_the_end_kernel launched at tests/sim/broken_memory.cu");
  // A write into the rounding slack (4000 of 4096 bytes) is found after the launch.
  expect_outcome("write_past_end", {}, kOutOfBounds);
  // A read there returns the poison pattern (NaN).
  expect_outcome("read_past_end_slack", {}, "wrong");
#endif
}

// Static __shared__ arrays are thread_local: the pointer checks know each array's bounds from the
// symbol table; under ASan only UBSan's bounds check sees a direct out-of-range index; under TSan
// nothing does (the table in docs/cuda-simulator.md).
#if SEG_SIM_TEST_ASAN
TEST_CASE("sim catches: out-of-bounds static shared memory (UBSan)") {
  expect_crash("static_shared_oob", {}, "index 64 out of bounds for type 'float [64]'", "broken_memory.cu");
}
#elif SEG_SIM_TEST_INSTRUMENTED
TEST_CASE("sim catches: out-of-bounds static shared memory (pointer checks)") {
  expect_report("static_shared_oob", {}, kOutOfBounds,
                "is 0 bytes past the end of the static __shared__ array "
                "(anonymous namespace)::static_shared_out_of_bounds_kernel(float const*, float*)::buf (256 bytes)",
                "at tests/sim/broken_memory.cu:24");
  expect_outcome("static_shared_oob", {"SEG_SIM_CHECK_POINTERS=0"}, "correct");
}
#endif

TEST_CASE("sim catches: dynamic shared memory used past the launched size") {
#if SEG_SIM_TEST_ASAN
  expect_crash("dynamic_shared_guard_overrun", {}, "use-after-poison", "broken_memory.cu");
  expect_crash("dynamic_shared_slack_overrun", {}, "use-after-poison", "broken_memory.cu");
#elif SEG_SIM_TEST_INSTRUMENTED
  expect_report("dynamic_shared_guard_overrun", {}, kSharedOverrun,
                "4-byte store to 0x", "is 0 bytes past the end of the 256 bytes of dynamic shared memory given at launch");
  expect_report("dynamic_shared_slack_overrun", {}, kSharedOverrun,
                "is 0 bytes past the end of the 400 bytes of dynamic shared memory given at launch",
                "at tests/sim/broken_memory.cu:32");
#else
  expect_crash("dynamic_shared_guard_overrun", {},
               "256 bytes after the start of the 256 bytes of dynamic shared memory given at launch",
               "in kernel dynamic_shared_overrun_kernel");
  expect_outcome("dynamic_shared_slack_overrun", {}, kSharedOverrun);
#endif
  // Memory no thread wrote reads as the poison pattern (NaN), in every build and schedule.
  expect_outcome("dynamic_shared_uninitialised", {}, "wrong");
  expect_outcome("dynamic_shared_uninitialised", kReverse, "wrong");
}

TEST_CASE("sim catches: non-atomic update from several blocks (TSan with workers)") {
#if SEG_SIM_TEST_TSAN
  // Consecutive blocks run on different workers with no happens-before edge between them.
  expect_race("cross_block_non_atomic", {"SEG_SIM_WORKERS=2"}, "broken_memory.cu");
#else
  // Blocks run one after another on one worker: the sum comes out right and nothing is reported.
  expect_outcome("cross_block_non_atomic", {}, "correct");
#endif
}

TEST_CASE("sim catches: pointers a kernel must not dereference") {
#if SEG_SIM_TEST_INSTRUMENTED
  for (const auto& env : {std::vector<std::string>{}, kReverse, random_seed(2)}) {
    expect_report("host_pointer", env, kBadAddress, "4-byte load from 0x", "at tests/sim/broken_pointers.cu:14");
    expect_report("host_pointer", env, kBadAddress, "is host memory", "in kernel scale_by_two_kernel");
    // The free's call stack names the code that freed the buffer.
    expect_report("use_after_free", env, kUseAfterFree,
                  "which was freed by simtest::(anonymous namespace)::use_after_free()",
                  "at tests/sim/broken_pointers.cu:14");
    expect_report("other_threads_local", env, kBadAddress, "is in the stack (local variables) of thread 0 of the block",
                  "at tests/sim/broken_pointers.cu:24");
  }
  // Without the checks a host pointer "works" (the simulator runs on the host), as the old
  // simulator did; on a GPU it is an illegal address.
  expect_outcome("host_pointer", {"SEG_SIM_CHECK_POINTERS=0"}, "correct");
  expect_outcome("other_threads_local", {"SEG_SIM_CHECK_POINTERS=0"}, "correct");
#elif SEG_SIM_TEST_ASAN
  // Host memory and another fiber's stack are valid memory to ASan: nothing is noticed.
  expect_outcome("host_pointer", {}, "correct");
  expect_outcome("other_threads_local", {}, "correct");
  // ASan's allocator and quarantine hold the freed block (device memory comes from it here).
  expect_crash("use_after_free", {}, "heap-use-after-free", "broken_pointers.cu");
#else
  expect_outcome("host_pointer", {}, "correct");
  expect_outcome("other_threads_local", {}, "correct");
  // The freed block's range stays reserved without access: the SIGSEGV handler names it.
  expect_crash("use_after_free", {}, "bytes into a freed 1200-byte device allocation: a use after free",
               "in kernel scale_by_two_kernel");
#endif
}

// The performance counters (default build only) show the waste of kernels whose results are
// right; the numbers are derived in docs/cuda-simulator.md ("Counters").
TEST_CASE("sim counts: a bank-conflicted transpose and uncoalesced loads" * doctest::skip(!SEG_SIM_TEST_INSTRUMENTED)) {
  // 64 x 96 floats: 6 blocks of 8 warps, 4 column reads per warp, each 32 words in one bank.
  expect_report("transpose_bank_conflicts", {}, "counted:bank conflicts",
                "shared loads: 192 requests, 5952 bank conflicts (31.00 per request)", "");
  // 256 rows of 40 floats: 8 warps x 40 loads, each lane in its own sector.
  expect_report("uncoalesced_rows", {}, "counted:uncoalesced",
                "global loads: 320 requests, 10240 sectors (32.00 per request)", "");
  // The counts do not depend on the schedule.
  expect_report("transpose_bank_conflicts", kReverse, "counted:bank conflicts", "(31.00 per request)", "");
  expect_report("uncoalesced_rows", random_seed(3), "counted:uncoalesced", "(32.00 per request)", "");
}

TEST_CASE("sim catches: stack overflow of a simulated thread") {
#if SEG_SIM_TEST_INSTRUMENTED
  // A 1 MiB frame lands below the 256 KiB stack: the pointer check stops the first access there,
  // unless the memory below is unmapped and the callback's own call faults first (SIGSEGV). Which
  // one depends on the address-space layout; both name the stack overflow.
  for (int run = 0; run < 3; ++run) {
    const simtest::BugRun r = run_bug("stack_overflow", {});
    INFO(r.output);
    if (r.outcome.empty()) {
      CHECK(r.caught_by("stack overflow: the simulated thread used its whole"));
    } else {
      CHECK(r.outcome == "fault:stack overflow");
      CHECK(r.caught_by("bytes below this thread's stack: a stack overflow"));
    }
    CHECK(r.caught_by("stack_overflow_kernel"));
  }
#elif SEG_SIM_TEST_ASAN
  // ASan knows the OS thread's stack, not the fiber's: it reports a SEGV in the kernel.
  expect_crash("stack_overflow", {}, "AddressSanitizer: SEGV", "in stack_overflow_kernel");
#else
  expect_crash("stack_overflow", {}, "stack overflow: the simulated thread used its whole",
               "in kernel stack_overflow_kernel");
#endif
}

TEST_CASE("sim catches: divergent and partial-warp collectives") {
  for (const auto& env : {std::vector<std::string>{}, kReverse, random_seed(1)}) {
    expect_outcome("divergent_shuffle_barrier", env, kDeadlock);
    expect_outcome("divergent_shuffle_exit", env, kInactiveLanes);
    expect_outcome("partial_warp", env, kInactiveLanes);
  }
  // Without strict mode the reads from missing lanes return the poison value.
  expect_outcome("divergent_shuffle_exit", {"SEG_SIM_STRICT=0"}, "wrong");
  expect_outcome("partial_warp", {"SEG_SIM_STRICT=0"}, "wrong");
  expect_outcome("mask_without_caller", {}, kBadArgument);
  expect_outcome("mismatched_collectives", {}, kDivergentCollective);
  expect_outcome("bad_width", {}, kBadArgument);
}

TEST_CASE("sim catches: WMMA code that depends on the lane mapping or breaks WMMA's rules") {
  expect_outcome("wmma_bias_by_lane", {}, kFragment);
  expect_outcome("wmma_lane_dependent", {}, kFragment);
  expect_outcome("wmma_misaligned", {}, kMisaligned);
  expect_outcome("wmma_bad_ldm", {}, kMisaligned);
  expect_outcome("wmma_divergent", {}, kDivergentCollective);
}

TEST_CASE("sim catches: misuse of the PTX helpers") {
  expect_outcome("cp_async_no_wait", {}, "wrong");
  expect_outcome("ldmatrix_misaligned", {}, kMisaligned);
  expect_outcome("cp_async_from_host", {}, kBadAddress);
}

// ---- host code around correct kernels: streams, devices, graphs, host access (broken_streams.cu) ----

TEST_CASE("sim catches: a missing cudaStreamWaitEvent (race detector; wrong results under random stream order)") {
  // The race detector reports it whatever the order in which the streams' work runs.
  expect_outcome("missing_stream_wait", {}, "fault:stream race");
  const std::vector<std::string> no_races = {"SEG_SIM_RACE_CHECK=0"};
  // In enqueue order the upload happens to run first: the results are right, as on a quiet GPU.
  expect_outcome("missing_stream_wait", no_races, "correct");
#if !SEG_SIM_TEST_TSAN  // the seed sweep checks results, which TSan does not change (and each child costs a second)
  int wrong = 0;
  for (int seed = 1; seed <= 5; ++seed) {
    std::vector<std::string> env = {"SEG_SIM_STREAM_ORDER=random", "SEG_SIM_SEED=" + std::to_string(seed)};
    expect_outcome("missing_stream_wait", env, "fault:stream race");
    env.push_back("SEG_SIM_RACE_CHECK=0");
    const simtest::BugRun r = run_bug("missing_stream_wait", env);
    INFO("seed " << seed << "\n" << r.output);
    CHECK((r.outcome == "wrong" || r.outcome == "correct"));
    wrong += r.outcome == "wrong";
  }
  CHECK(wrong >= 1);  // the kernel ran before the upload under some seeds
#endif
}

TEST_CASE("sim catches: a kernel on another device's memory without peer access") {
  expect_outcome("peer_access_not_enabled", {}, "fault:peer access not enabled");
}

TEST_CASE("sim catches: calls a stream capture forbids") {
  expect_outcome("capture_sync_copy", {}, "error:cudaErrorStreamCaptureUnsupported");
  expect_outcome("capture_malloc", {}, "error:cudaErrorStreamCaptureUnsupported");
}

TEST_CASE("sim catches: host code dereferencing device memory") {
#if SEG_SIM_TEST_ASAN
  // Device allocations are poisoned while host code runs: ASan reports the read with its stack,
  // after the simulator's explanation.
  expect_crash("host_reads_device_memory", {}, "use-after-poison", "seg::sim: host code dereferenced device memory");
#else
  // Device allocations are PROT_NONE while host code runs: the SIGSEGV handler explains.
  expect_crash("host_reads_device_memory", {},
               "host code dereferenced device memory: the address",
               "0 bytes into a 512-byte device allocation (device 0)");
  const simtest::BugRun r = run_bug("host_reads_device_memory", {});
  CHECK(r.caught_by("copy it with cudaMemcpy"));
  CHECK(r.caught_by("the faulting instruction is at test_sim+0x"));
#endif
  // With the check off the host reads whatever is there: the kernel has not even run yet.
  expect_outcome("host_reads_device_memory", {"SEG_SIM_HOST_FAULTS=0"}, "wrong");
}

TEST_CASE("sim catches: host code that does not wait for asynchronous copies") {
  // Pinned-memory copies happen when the stream runs: reading the destination, or refilling the
  // source, before synchronising sees the old bytes (a GPU usually hides this by being fast).
  expect_outcome("async_copy_read_before_sync", {}, "wrong");
  expect_outcome("staging_buffer_reused", {}, "wrong");
}
