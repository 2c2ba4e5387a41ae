// Dynamic shared memory: one buffer per worker, placed so that the launched size ends at a guard
// page. What seg::dynamic_smem<T>() (kernels/cuda/dynamic_smem.h) returns in the simulator.
//
// Each block starts with the buffer filled with 0xFF bytes (reads of memory the block never wrote
// give NaN or -1, not a stale value or a lucky zero). An access beyond the launched size either
// hits the guard page (a SIGSEGV that signals.cpp explains) or, within the rounding to 128 bytes,
// changes a canary that is checked when the block ends. Under ASan, everything past the launched
// size is poisoned instead, and ASan reports the access at the kernel's line.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>

#include "kernels/sim/sanitizer_hooks.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

namespace {
constexpr size_t kMaxDynamicSmem = 232448;  // 227 KiB: sm_90's opt-in limit per block
constexpr size_t kSpanAlignment = 128;
constexpr unsigned char kPoison = 0xFF;
size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
}  // namespace

void DynamicSmem::prepare(size_t bytes) {
  if (!map) {
    const size_t page = page_size();
    const size_t usable = (kMaxDynamicSmem + page - 1) / page * page;
    map_size = usable + page;
    void* m = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    map = static_cast<char*>(m);
    guard = map + usable;
    mprotect(guard, page, PROT_NONE);
  }
  size = bytes;
  span = (bytes + kSpanAlignment - 1) / kSpanAlignment * kSpanAlignment;
  base = guard - span;
}

void DynamicSmem::begin_block() {
  if (san::asan) {
    san::poison(map, map_size);  // the guard page too: ASan reports before the access faults
    san::unpoison(base, size);
    std::memset(base, kPoison, size);
  } else {
    std::memset(base, kPoison, span);
  }
}

size_t DynamicSmem::overrun_bytes() const {
  if (san::asan) return 0;  // the slack is poisoned: ASan reports such accesses when they happen
  size_t changed = 0;
  for (size_t i = size; i < span; ++i) changed += static_cast<unsigned char>(base[i]) != kPoison;
  return changed;
}

DynamicSmem::~DynamicSmem() {
  if (map) {
    san::unpoison(map, map_size);
    munmap(map, map_size);
  }
}

void* dynamic_smem(size_t alignment, size_t byte_offset, const Where& where) {
  Worker& w = running_worker("seg::dynamic_smem");
  if (alignment && byte_offset % alignment != 0)
    fault(FaultKind::misaligned,
          "seg::dynamic_smem: byte offset " + std::to_string(byte_offset) +
              " is not a multiple of the element alignment " + std::to_string(alignment),
          where);
  if (byte_offset > w.smem.size)
    fault(FaultKind::shared_overrun,
          "seg::dynamic_smem: byte offset " + std::to_string(byte_offset) + " is beyond the " +
              std::to_string(w.smem.size) + " bytes of dynamic shared memory given at launch",
          where);
  return w.smem.base + byte_offset;
}

}  // namespace seg::sim::detail
