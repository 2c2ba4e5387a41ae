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

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// The live allocation that contains p, or end().
std::map<uintptr_t, Allocation>::iterator containing(uintptr_t p) {
  auto it = g_allocations->upper_bound(p);
  if (it == g_allocations->begin()) return g_allocations->end();
  --it;
  if (p >= it->first + std::max<size_t>(it->second.bytes, 1)) return g_allocations->end();
  return it;
}

}  // namespace

void* allocate_memory(size_t bytes, MemoryKind kind) {
  Allocation a;
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

}  // namespace seg::sim::detail
