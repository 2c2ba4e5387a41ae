#include "kernels/sim/device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>

#include "kernels/sim/sanitizer_hooks.h"

namespace seg::sim::detail {

namespace {

constexpr size_t kAlignment = 256;  // cudaMalloc's guarantee
constexpr unsigned char kPoison = 0xFF;

struct Allocation {
  size_t bytes = 0;
  size_t rounded = 0;  // bytes rounded up to kAlignment: the slack is checked after launches
  MemoryKind kind = MemoryKind::device;
  void* map = nullptr;  // guarded allocations: the mapping (data + guard page), else null
  size_t map_size = 0;
  int device = 0;
  const void* caller = nullptr;
};

// A spin lock, not a mutex: the registry is read from simulated threads, and a pthread mutex would
// give TSan happens-before edges between them that CUDA does not have. The runtime is compiled
// without TSan instrumentation, so this lock is invisible to it. try_lock serves the signal handler.
class SpinLock {
 public:
  void lock() {
    while (flag_.exchange(true, std::memory_order_acquire)) {
    }
  }
  bool try_lock() { return !flag_.exchange(true, std::memory_order_acquire); }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

SpinLock g_lock;
std::map<uintptr_t, Allocation>* g_allocations = new std::map<uintptr_t, Allocation>();  // never freed: used at exit
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

}  // namespace

void* allocate_memory(size_t bytes, MemoryKind kind) { return allocate_memory(bytes, kind, 0, nullptr); }

void* allocate_memory(size_t bytes, MemoryKind kind, int device, const void* caller) {
  Allocation a;
  a.device = kind == MemoryKind::pinned_host ? -1 : device;
  a.caller = caller;
  a.bytes = bytes;
  a.rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  a.kind = kind;
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
  g_lock.unlock();
  if (a.map) {
    munmap(a.map, a.map_size);
  } else {
    std::free(p);
  }
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
  for (const auto& [begin, a] : *g_allocations) n += a.device == device;
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

}  // namespace seg::sim::detail
