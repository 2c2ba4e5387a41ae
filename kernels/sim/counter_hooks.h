// The runtime's side of the performance counters (counters.h): what the scheduler, the warp
// collectives, the WMMA and PTX emulations and the pointer checks call (internal).
//
// Counting happens only on OS threads running a launch with Options::counters (or profile) set;
// every hook returns at once otherwise, after one thread-local load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace seg::sim {
struct KernelCounters;  // counters.h
}  // namespace seg::sim

namespace seg::sim::detail {

struct Worker;
struct SimThread;
struct LaunchState;

enum class MemorySpace : uint8_t { global, shared, local, parameter, builtin };

// Whether g++ instrumented kernel code in this build (access_check.cpp): the default build, not
// the ASan or TSan ones.
bool kernel_code_instrumented();

// Set while the calling OS thread runs blocks of a counted launch.
bool counting();

void counters_begin_launch(LaunchState& launch);
// After every worker finished: records the counts of a launch that did not fault (the totals, the
// SEG_SIM_PROFILE table) and returns them; null when the launch was not counted or faulted.
std::shared_ptr<const KernelCounters> counters_end_launch(LaunchState& launch, bool faulted);
void counters_prepare_worker(Worker& w);        // on the worker's thread, before its blocks
void counters_release_worker(Worker& w);        // after its blocks: adds its counts to the launch
void counters_end_block(Worker& w);

// One access of kernel code (from access_check.cpp): `site` is the code address of the access.
void count_access(Worker& w, const SimThread& t, MemorySpace space, uintptr_t address, uint32_t bytes, bool store,
                  uintptr_t site);
// A WMMA tile moved by the warp: `lines` lines of `line_bytes` contiguous bytes, `stride` apart.
void count_tile(MemorySpace space, const void* base, unsigned lines, unsigned line_bytes, size_t stride, bool store);
void count_mma(int m, int n, int k, bool tf32);
void count_fp32_fma();
void count_barrier(Worker& w);
// A warp collective completed with `participants`; a full warp reconverges the request grouping.
void count_collective(Worker& w, unsigned warp, uint32_t participants, uint32_t live_lanes);

}  // namespace seg::sim::detail
