// The stream race detector (internal header; user guide: docs/cuda-simulator.md, "Stream races").
//
// A race is two operations on different streams (kernels, copies, memsets, stream-ordered frees)
// that touch the same bytes, at least one of them writing, with no happens-before relation
// between them. Happens-before is CUDA's: program order on a stream, cudaEventRecord ->
// cudaStreamWaitEvent, the legacy default stream's implicit synchronisation with blocking
// streams, graph edges, and host synchronisation (a host thread that waited for work -- stream,
// event or device synchronisation, a synchronous copy, a query that said "done" -- orders
// everything it enqueues afterwards after that work). It is computed with vector clocks: every
// stream (and every node of an instantiated graph) is a component; an operation's clock, fixed
// when it is enqueued, is the join of the clocks of everything it waits for plus its own tick.
// The check itself runs when an operation executes, against the shadow of earlier accesses to the
// same allocation, so it does not depend on the order in which the executor happened to run
// independent work: both orders of an unordered pair report the race.
//
// Access sets:
//   * copies and memsets: the exact byte ranges (each row of a 2-D copy); pageable host memory is
//     not tracked (the runtime stages or synchronises those copies, so they cannot race);
//   * stream-ordered frees (cudaFreeAsync): a write of the whole allocation;
//   * kernels, exactly, where kernel code is instrumented and the pointer checks are on (the
//     default build, access_check.h): the union of the global bytes the launch's threads loaded
//     and stored (LaunchContext::record_accesses; WMMA tiles line by line), checked after the
//     kernel ran; a launch that faulted is not checked (its fault is reported instead);
//   * kernels, conservatively, elsewhere (ASan and TSan builds, SEG_SIM_CHECK_POINTERS=0): for each
//     pointer argument, the whole allocation it points into (or the buffer an allocator annotated,
//     seg::sim::annotate_buffer), read-only when the parameter points to const, else read and
//     write, checked before the kernel runs. Pointers inside structs are not seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace seg::sim::detail {

// A sparse vector clock: (component, clock) pairs sorted by component.
class VectorClock {
 public:
  uint64_t get(uint32_t component) const;
  void set(uint32_t component, uint64_t value);
  void join(const VectorClock& other);
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<uint32_t, uint64_t>> entries_;
};

// Bytes [begin, end) read, or read and written.
struct Access {
  uintptr_t begin = 0, end = 0;
  bool write = false;
};

// Who made an access, for reports.
struct AccessLabel {
  std::string what;    // "kernel produce_kernel launched at tests/sim/broken_streams.cu:40"
  std::string stream;  // "stream 0x55d0c0 (device 0)"
};

// The operation being checked: its component, clock and a label made on demand.
struct AccessOwner {
  uint32_t component;
  uint64_t tick;  // its own clock value
  const VectorClock* clock;
  std::shared_ptr<const AccessLabel> label;
};

// Checks the accesses of one executing operation against the shadow and records them. Returns
// the report of the first race found (also counted), or nothing. Thread-safe.
std::optional<std::string> check_accesses(const AccessOwner& owner, const std::vector<Access>& accesses,
                                          bool conservative_kernel);
// Forgets everything recorded about an allocation, and the buffers annotated in it (it was freed).
// A stream-ordered free (cudaFreeAsync) keeps the records, its own write among them, until the
// addresses are allocated again: an unordered access on another stream is still a race with the
// free, whichever ran first.
void forget_allocation(uintptr_t begin, size_t bytes, bool stream_ordered_free = false);
// A new allocation at [begin, begin + bytes): earlier freed allocations there are gone for good.
void forget_freed(uintptr_t begin, size_t bytes);
// Whether p lies in memory a stream-ordered free released (and nothing reused): its range.
bool freed_by_stream_order(const void* p, uintptr_t* begin, size_t* bytes);

// The conservative range of a kernel's pointer argument: the annotated buffer or the allocation
// that contains it. False when the pointer is not inside any allocation.
bool conservative_range(const void* p, uintptr_t* begin, uintptr_t* end);

// Sorts accesses and joins the overlapping or touching ranges of the same mode (reads and writes
// stay apart): what the per-access recording of a kernel hands to check_accesses.
std::vector<Access> merge_accesses(std::vector<Access> accesses);

}  // namespace seg::sim::detail
