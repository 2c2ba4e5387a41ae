#include "kernels/sim/device_memory.h"

#include <execinfo.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <new>
#include <utility>
#include <vector>

#include "kernels/sim/elf_symbols.h"
#include "kernels/sim/sanitizer_hooks.h"
#include "kernels/sim/spin_lock.h"

namespace seg::sim::detail {

namespace {

constexpr size_t kAlignment = 256;  // cudaMalloc's guarantee
constexpr unsigned char kPoison = 0xFF;
// The quarantine keeps the most recent frees: at most this many, reserving at most this much
// address space (reserved ranges cost no memory, only address space and one mapping each).
constexpr size_t kQuarantineEntries = 4096;
constexpr size_t kQuarantineBytes = size_t{64} << 30;

struct Allocation {
  size_t bytes = 0;
  size_t rounded = 0;  // bytes rounded up to kAlignment: the slack is checked after launches
  MemoryKind kind = MemoryKind::device;
  int device = 0;
  void* map = nullptr;  // guarded allocations: the mapping (data + guard page), else null
  size_t map_size = 0;
  const void* caller = nullptr;  // the code address that called the runtime
  CallStack allocated_by;
};

struct Freed {
  Allocation allocation;
  CallStack freed_by;
};

// The registry is read from simulated threads: a spin lock (spin_lock.h), not a mutex.
SpinLock g_lock;
std::map<uintptr_t, Allocation>* g_allocations = new std::map<uintptr_t, Allocation>();  // never freed: used at exit
std::map<uintptr_t, Freed>* g_freed = new std::map<uintptr_t, Freed>();                  // the quarantine
std::deque<uintptr_t>* g_freed_order = new std::deque<uintptr_t>();                      // oldest first
size_t g_freed_bytes = 0;
size_t g_device_bytes = 0;
bool g_device_memory_accessible = false;  // see set_device_memory_accessible

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// The live allocation that contains p, or end().
std::map<uintptr_t, Allocation>::iterator containing(uintptr_t p) {
  auto it = g_allocations->upper_bound(p);
  if (it == g_allocations->begin()) return g_allocations->end();
  --it;
  if (p >= it->first + std::max<size_t>(it->second.bytes, 1)) return g_allocations->end();
  return it;
}

// Opens or closes one allocation to host code (device kind only; g_lock held).
void set_accessible(uintptr_t begin, const Allocation& a, bool accessible) {
  if (a.kind != MemoryKind::device) return;
  if (a.map) {
    mprotect(a.map, a.map_size - page_size(), accessible ? PROT_READ | PROT_WRITE : PROT_NONE);
  } else if (accessible) {
    san::unpoison(reinterpret_cast<void*>(begin), std::max<size_t>(a.bytes, 1));
  } else {
    san::poison(reinterpret_cast<void*>(begin), std::max<size_t>(a.bytes, 1));
  }
}

// The caller's call stack, without this function's own frames.
CallStack capture_call_stack() {
  CallStack s;
  void* frames[CallStack::kFrames + 2];
  const int n = backtrace(frames, CallStack::kFrames + 2);
  for (int i = 2, k = 0; i < n && k < CallStack::kFrames; ++i, ++k) s.pc[k] = reinterpret_cast<uintptr_t>(frames[i]);
  return s;
}

AllocationRecord record_of(uintptr_t begin, const Allocation& a) {
  AllocationRecord r;
  r.begin = begin;
  r.bytes = a.bytes;
  r.kind = a.kind;
  r.device = a.device;
  r.allocated_by = a.allocated_by;
  return r;
}

// Releases the oldest quarantined blocks beyond the limits. Called with g_lock held; returns the
// mappings to unmap once the lock is released.
std::vector<std::pair<void*, size_t>> trim_quarantine() {
  std::vector<std::pair<void*, size_t>> unmap;
  while (!g_freed_order->empty() && (g_freed_order->size() > kQuarantineEntries || g_freed_bytes > kQuarantineBytes)) {
    auto it = g_freed->find(g_freed_order->front());
    g_freed_order->pop_front();
    if (it == g_freed->end()) continue;
    const Allocation& a = it->second.allocation;
    g_freed_bytes -= a.map ? a.map_size : a.rounded;
    if (a.map) unmap.emplace_back(a.map, a.map_size);
    g_freed->erase(it);
  }
  return unmap;
}

}  // namespace

const char* memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::device:
      return "device";
    case MemoryKind::managed:
      return "managed";
    case MemoryKind::pinned_host:
      return "pinned host";
  }
  return "?";
}

void* allocate_memory(size_t bytes, MemoryKind kind, int device, const void* caller) {
  Allocation a;
  a.caller = caller;
  a.bytes = bytes;
  a.rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  a.kind = kind;
  a.device = device;
  a.allocated_by = capture_call_stack();
  char* p = nullptr;
  if (san::asan || kind == MemoryKind::pinned_host) {
    // Exactly `bytes` from the C allocator: under ASan its redzone starts right at the end, so an
    // overflow is reported as heap-buffer-overflow at the kernel's line.
    void* m = nullptr;
    if (posix_memalign(&m, kAlignment, std::max<size_t>(bytes, 1)) != 0) return nullptr;
    p = static_cast<char*>(m);
    std::memset(p, kPoison, std::max<size_t>(bytes, 1));
  } else {
    const size_t page = page_size();
    a.map_size = (a.rounded + page - 1) / page * page + page;
    void* m = mmap(nullptr, a.map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    a.map = m;
    char* guard = static_cast<char*>(m) + a.map_size - page;
    mprotect(guard, page, PROT_NONE);
    p = guard - a.rounded;
    std::memset(p, kPoison, a.rounded);
  }
  g_lock.lock();
  if (!g_device_memory_accessible) set_accessible(reinterpret_cast<uintptr_t>(p), a, false);
  (*g_allocations)[reinterpret_cast<uintptr_t>(p)] = a;
  if (kind != MemoryKind::pinned_host) g_device_bytes += bytes;
  g_lock.unlock();
  return p;
}

bool free_memory(void* p, MemoryKind kind) {
  const CallStack freed_by = capture_call_stack();
  g_lock.lock();
  auto it = g_allocations->find(reinterpret_cast<uintptr_t>(p));
  const bool host_kind = kind == MemoryKind::pinned_host;
  if (it == g_allocations->end() || (it->second.kind == MemoryKind::pinned_host) != host_kind) {
    g_lock.unlock();
    return false;
  }
  const Allocation a = it->second;
  g_allocations->erase(it);
  if (!host_kind) g_device_bytes -= a.bytes;
  if (!a.map && !g_device_memory_accessible) set_accessible(reinterpret_cast<uintptr_t>(p), a, true);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
  if (auto old = g_freed->find(begin); old != g_freed->end()) {
    // The C allocator reused the address of an earlier free: forget that one.
    g_freed_bytes -= old->second.allocation.map ? old->second.allocation.map_size : old->second.allocation.rounded;
    g_freed->erase(old);
  }
  (*g_freed)[begin] = Freed{a, freed_by};
  g_freed_order->push_back(begin);
  g_freed_bytes += a.map ? a.map_size : a.rounded;
  const auto unmap = trim_quarantine();
  g_lock.unlock();
  if (a.map) {
    // Keep the range reserved, without its memory: no later allocation gets this address while the
    // block is in quarantine.
    mmap(a.map, a.map_size, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  } else {
    std::free(p);
  }
  for (const auto& [m, size] : unmap) munmap(m, size);
  return true;
}

bool inside_allocation(const void* p, size_t bytes, MemoryKind* kind) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  g_lock.lock();
  auto it = containing(a);
  const bool ok = it != g_allocations->end() && a + bytes <= it->first + it->second.bytes;
  if (ok && kind) *kind = it->second.kind;
  g_lock.unlock();
  return ok;
}

size_t allocated_device_bytes() {
  g_lock.lock();
  const size_t n = g_device_bytes;
  g_lock.unlock();
  return n;
}

std::string check_allocation_slack() {
  if (san::asan) return "";  // ASan reports such writes when they happen
  std::string report;
  g_lock.lock();
  for (auto& [begin, a] : *g_allocations) {
    if (!a.map) continue;  // only guarded allocations have a slack
    auto* p = reinterpret_cast<unsigned char*>(begin);
    size_t changed = 0;
    for (size_t i = a.bytes; i < a.rounded; ++i) changed += p[i] != kPoison;
    if (changed) {
      char line[160];
      std::snprintf(line, sizeof line, "  %zu byte(s) written past the end of the %zu-byte allocation at %p\n", changed,
                    a.bytes, static_cast<void*>(p));
      report += line;
      std::memset(p + a.bytes, kPoison, a.rounded - a.bytes);  // report each overrun once
    }
  }
  g_lock.unlock();
  return report;
}

bool guard_page_owner(const void* addr, uintptr_t* begin, size_t* bytes) {
  if (!g_lock.try_lock()) return false;
  const auto x = reinterpret_cast<uintptr_t>(addr);
  bool found = false;
  const size_t page = page_size();
  for (auto& [b, a] : *g_allocations) {
    if (!a.map) continue;
    const uintptr_t guard = reinterpret_cast<uintptr_t>(a.map) + a.map_size - page;
    if (x >= guard && x < guard + page) {
      *begin = b;
      *bytes = a.bytes;
      found = true;
      break;
    }
  }
  g_lock.unlock();
  return found;
}

namespace {
void fill_info(uintptr_t begin, const Allocation& a, AllocationInfo* info) {
  info->begin = begin;
  info->bytes = a.bytes;
  info->kind = a.kind;
  info->device = a.device;
  info->caller = a.caller;
}
}  // namespace

bool find_allocation(const void* p, AllocationInfo* info) {
  g_lock.lock();
  auto it = containing(reinterpret_cast<uintptr_t>(p));
  const bool found = it != g_allocations->end();
  if (found) fill_info(it->first, it->second, info);
  g_lock.unlock();
  return found;
}

bool try_find_allocation(const void* p, AllocationInfo* info) {
  if (!g_lock.try_lock()) return false;
  auto it = containing(reinterpret_cast<uintptr_t>(p));
  const bool found = it != g_allocations->end();
  if (found) fill_info(it->first, it->second, info);
  g_lock.unlock();
  return found;
}

size_t allocated_device_bytes(int device) {
  size_t n = 0;
  g_lock.lock();
  for (const auto& [begin, a] : *g_allocations)
    if (a.kind != MemoryKind::pinned_host && a.device == device) n += a.bytes;
  g_lock.unlock();
  return n;
}

size_t allocation_count(int device) {
  size_t n = 0;
  g_lock.lock();
  for (const auto& [begin, a] : *g_allocations) n += a.kind != MemoryKind::pinned_host && a.device == device;
  g_lock.unlock();
  return n;
}

void set_device_memory_accessible(bool accessible) {
  g_lock.lock();
  if (g_device_memory_accessible != accessible) {
    g_device_memory_accessible = accessible;
    for (const auto& [begin, a] : *g_allocations) set_accessible(begin, a, accessible);
  }
  g_lock.unlock();
}

bool freed_block_owner(const void* addr, uintptr_t* begin, size_t* bytes) {
  if (!g_lock.try_lock()) return false;
  const auto x = reinterpret_cast<uintptr_t>(addr);
  bool found = false;
  auto it = g_freed->upper_bound(x);
  if (it != g_freed->begin()) {
    --it;
    const Allocation& a = it->second.allocation;
    // The whole reserved mapping: the data, the slack and the guard page.
    const uintptr_t lo = a.map ? reinterpret_cast<uintptr_t>(a.map) : it->first;
    const uintptr_t hi = a.map ? lo + a.map_size : it->first + a.rounded;
    if (x >= lo && x < hi) {
      *begin = it->first;
      *bytes = a.bytes;
      found = true;
    }
  }
  g_lock.unlock();
  return found;
}

}  // namespace seg::sim::detail

namespace seg::sim::detail {

AddressLookup look_up_address(uintptr_t address) {
  AddressLookup r;
  SpinGuard lock(g_lock);
  auto next = g_allocations->upper_bound(address);
  if (next != g_allocations->end()) {
    r.has_after = true;
    r.after = record_of(next->first, next->second);
  }
  if (next != g_allocations->begin()) {
    auto prev = std::prev(next);
    if (address < prev->first + std::max<size_t>(prev->second.bytes, 1)) {
      r.live = true;
      r.allocation = record_of(prev->first, prev->second);
    } else {
      r.has_before = true;
      r.before = record_of(prev->first, prev->second);
    }
  }
  auto f = g_freed->upper_bound(address);
  if (f != g_freed->begin()) {
    --f;
    const Allocation& a = f->second.allocation;
    // Only a block whose address range stays reserved (a.map) is still "freed memory": one from the
    // C allocator (pinned host memory, every block under ASan) went back to the heap, and host code
    // may own those bytes now (a std::vector allocated after cudaFreeHost).
    if (a.map && address < f->first + std::max<size_t>(a.rounded, 1)) {
      r.freed = true;
      r.freed_allocation = record_of(f->first, a);
      r.freed_allocation.freed_by = f->second.freed_by;
    }
  }
  return r;
}

bool live_allocation_containing(uintptr_t address, AllocationRecord* record) {
  SpinGuard lock(g_lock);
  auto it = containing(address);
  if (it == g_allocations->end()) return false;
  record->begin = it->first;
  record->bytes = it->second.bytes;
  record->kind = it->second.kind;
  record->device = it->second.device;
  record->allocated_by = it->second.allocated_by;  // for fault reports (peer access, overruns)
  return true;
}

std::string describe_call_stack(const CallStack& stack, int max_frames) {
  std::string out;
  int shown = 0;
  for (const uintptr_t pc : stack.pc) {
    if (!pc || shown >= max_frames) break;
    // pc is a return address: look up the call instruction before it.
    const ElfSymbol* f = ProgramSymbols::get().function_at(pc - 1);
    const std::string name = f ? demangle(f->name) : std::string();
    // The runtime's entry points and internals are not where the user's bug is.
    if (name.rfind("seg::sim::", 0) == 0 || name.rfind("cuda", 0) == 0) continue;
    if (!out.empty()) out += " <- ";
    if (name.empty()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%#lx", static_cast<unsigned long>(pc));
      out += buf;
    } else {
      out += name;
    }
    ++shown;
  }
  return out.empty() ? "(call stack unknown)" : out;
}

}  // namespace seg::sim::detail
