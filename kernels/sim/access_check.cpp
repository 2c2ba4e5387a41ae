// The pointer checks of kernel code (access_check.h): the instrumentation callbacks, the
// classification of an address, and the fault reports.
//
// Cost. The callbacks run for every load and store of kernel code, so the common cases are a few
// compares on one thread-local context: the thread's own stack, the last four device allocations hit,
// the built-in variables, the last two static shared arrays and the dynamic shared memory. Everything
// else (the first access to an allocation, __device__ variables, kernel parameters, faults) takes
// the slow path: the registry under its spin lock, the symbol table, the loaded segments.
#include "kernels/sim/access_check.h"

#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/sim/builtins.h"
#include "kernels/sim/device_memory.h"
#include "kernels/sim/elf_symbols.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

[[noreturn]] void raise_fault_without_unwinding(Worker& w, FaultKind kind, std::string report);  // scheduler.cpp

bool kernel_code_instrumented() {
#if SEG_SIM_INSTRUMENTED
  return true;
#else
  return false;
#endif
}

namespace {

struct Range {
  uintptr_t begin = 0, size = 0;
  // [a, a + n) inside; a - begin wraps around for addresses below begin.
  bool holds(uintptr_t a, uintptr_t n) const { return a - begin < size && n <= size - (a - begin); }
};

struct AccessContext {
  Worker* worker = nullptr;
  bool check = true;
  bool count = false;
  Range stack;       // the running simulated thread's stack
  Range hits[4];     // the last live allocations accesses hit (a kernel reads x and writes y: two)
  unsigned next_hit = 0;
  Range builtins;    // threadIdx, blockIdx, blockDim, gridDim, when they are contiguous
  Range shared[2];   // the last two static __shared__ arrays hit
  unsigned next_shared = 0;
  Range smem;        // dynamic shared memory as launched
  Range smem_map;    // the whole dynamic shared memory buffer (launched part, slack, guard page)
  Range tls;         // this OS thread's TLS block of the executable
  bool tls_objects = false;  // the symbol table lists the TLS objects
  Range params;      // the launch's arguments (KernelInvoker)
  int device = 0;
  uint64_t accessible_devices = 1;
  const char* op = nullptr;  // the runtime operation being checked (check_runtime_access), for reports
  // LaunchContext::record_accesses: the global bytes this OS thread's blocks touched, for the stream
  // race detector. Runs of consecutive bytes merge as they come; the list is compacted (sorted and
  // merged) whenever it reaches `compact_at` entries, so it stays as long as the distinct ranges.
  bool record = false;
  std::vector<Access> touched;
  size_t compact_at = 4096;
};

thread_local AccessContext tls_context;
thread_local AccessContext* tls_access = nullptr;

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

std::string hex(uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#lx", static_cast<unsigned long>(v));
  return buf;
}

// ---- fault reports --------------------------------------------------------------------------------

std::string access_text(const AccessContext& c, uintptr_t a, uint32_t n, bool store) {
  return std::string(c.op ? c.op : "") + (c.op ? ": " : "") + std::to_string(n) + "-byte " +
         (store ? "store to " : "load from ") + hex(a);
}

std::string allocation_text(const AllocationRecord& r) {
  return "a " + std::to_string(r.bytes) + "-byte " + memory_kind_name(r.kind) + " allocation at " + hex(r.begin) +
         " (device " + std::to_string(r.device) + ", allocated by " + describe_call_stack(r.allocated_by) + ")";
}

// "N bytes past the end of <allocation>" / "N bytes before the start of <allocation>".
std::string relative_to(uintptr_t a, uint32_t n, uintptr_t begin, size_t bytes, const std::string& what) {
  const uintptr_t end = begin + bytes;
  if (a >= end) return std::to_string(a - end) + " bytes past the end of " + what;
  if (a < begin) return std::to_string(begin - a) + " bytes before the start of " + what;
  return "at byte offset " + std::to_string(a - begin) + " of " + what + "; its last " + std::to_string(a + n - end) +
         " bytes are past the end";
}

// Where the access is in the source: "file:line (function + offset)" or the function alone.
std::string code_text(uintptr_t pc, const Where* where) {
  if (where) return describe_where(*where);
  std::string line = source_line_of(pc);
  const std::string function = describe_code_address(pc);
  if (line.empty()) return function + " (compile with -g1 for the source line)";
  return std::string(relative_path(line.c_str())) + " (in " + function + ")";
}

// Stops the simulated thread with a fault. From the instrumentation callbacks (where == null) the
// thread cannot unwind: g++ treats those calls as nothrow, so it is parked where it stands.
[[noreturn]] void access_fault(AccessContext& c, FaultKind kind, const std::string& what, uintptr_t pc,
                               const Where* where) {
  Worker& w = *c.worker;
  std::string report = std::string("seg::sim: ") + fault_kind_name(kind) + ": " + what + "\n  at " +
                       code_text(pc, where) + "\n  in " + thread_context(w, *w.current);
  if (where) raise_fault(w, kind, report);
  raise_fault_without_unwinding(w, kind, std::move(report));
}

// ---- classification -------------------------------------------------------------------------------

enum class TlsKind { builtin, shared, simulator };

TlsKind tls_kind(const char* name) {
  if (std::strncmp(name, "_ZN3seg3sim", 11) == 0 || std::strncmp(name, "_ZZN3seg3sim", 12) == 0)
    return TlsKind::simulator;
  if (std::strcmp(name, "threadIdx") == 0 || std::strcmp(name, "blockIdx") == 0 || std::strcmp(name, "blockDim") == 0 ||
      std::strcmp(name, "gridDim") == 0 || std::strncmp(name, "_ZGV", 4) == 0 || std::strcmp(name, "__tls_guard") == 0)
    return TlsKind::builtin;
  return TlsKind::shared;  // block-scope (and namespace-scope) __shared__ variables
}

MemorySpace classify_tls(AccessContext& c, uintptr_t a, uint32_t n, bool store, uintptr_t pc, const Where* where) {
  if (!c.tls_objects) return MemorySpace::shared;  // no symbol table: the whole block is accepted
  const uintptr_t offset = a - c.tls.begin;
  const ElfSymbol* s = ProgramSymbols::get().tls_object_at_or_before(offset);
  // The gap after a file's shared arrays (cuda_sim.h): an overrun of the array before it.
  if (s && s->address > 0 && std::strstr(s->name, "shared_redzone") && std::strncmp(s->name, "_ZN3seg3sim", 11) == 0)
    s = ProgramSymbols::get().tls_object_at_or_before(s->address - 1);
  else if (s && offset + n <= s->address + s->size) {
    switch (tls_kind(s->name)) {
      case TlsKind::builtin:
        return MemorySpace::builtin;
      case TlsKind::shared:
        c.shared[c.next_shared] = Range{c.tls.begin + s->address, s->size};
        c.next_shared ^= 1u;
        return MemorySpace::shared;
      case TlsKind::simulator:
        break;
    }
    if (!c.check) return MemorySpace::local;
    access_fault(c, FaultKind::bad_address,
                 access_text(c, a, n, store) + " is inside the simulator's own thread-local variable " +
                     demangle(s->name) + ": kernel code must not touch it (a stray pointer?)",
                 pc, where);
  }
  if (!c.check) return MemorySpace::local;
  const std::string what =
      s ? std::string(tls_kind(s->name) == TlsKind::shared ? "the static __shared__ array " : "the thread-local variable ") +
              demangle(s->name) + " (" + std::to_string(s->size) + " bytes)"
        : "the static shared memory";
  access_fault(c, FaultKind::out_of_bounds,
               access_text(c, a, n, store) + " is " +
                   (s ? relative_to(a, n, c.tls.begin + s->address, s->size, what) : "outside " + what) +
                   "; static __shared__ arrays are thread_local variables in the simulator, so the access would "
                   "corrupt a neighbouring variable",
               pc, where);
}

// Whether `a` is in the stack (or its guard page) of another simulated thread of the block; sets
// `index`.
bool other_thread_stack(const Worker& w, uintptr_t a, unsigned* index) {
  const size_t page = page_size();
  for (unsigned i = 0; i < w.block.nthreads && i < w.threads.size(); ++i) {
    const SimThread& t = *w.threads[i];
    if (&t == w.current) continue;
    const auto lo = reinterpret_cast<uintptr_t>(t.fiber.stack_base());
    if (lo && a + page >= lo && a < lo + t.fiber.stack_bytes()) {
      *index = i;
      return true;
    }
  }
  return false;
}

MemorySpace classify_slow(AccessContext& c, uintptr_t a, uint32_t n, bool store, uintptr_t pc, const Where* where) {
  Worker& w = *c.worker;
  if (c.tls.holds(a, n)) return classify_tls(c, a, n, store, pc, where);
  if (c.params.holds(a, n)) return MemorySpace::parameter;

  AllocationRecord live;
  if (live_allocation_containing(a, &live)) {
    const bool fits = a + n <= live.begin + live.bytes;
    const bool reachable = live.kind != MemoryKind::device || live.device == c.device ||
                           (live.device >= 0 && live.device < 64 && (c.accessible_devices >> live.device & 1u));
    if (fits && reachable) {
      c.hits[c.next_hit] = Range{live.begin, live.bytes};
      c.next_hit = (c.next_hit + 1) % 4;
      return MemorySpace::global;
    }
    if (!c.check) return MemorySpace::local;
    if (!fits)
      access_fault(c, FaultKind::out_of_bounds,
                   access_text(c, a, n, store) + " is " + relative_to(a, n, live.begin, live.bytes, allocation_text(live)),
                   pc, where);
    access_fault(c, FaultKind::peer_access,
                 access_text(c, a, n, store) + " is in " + allocation_text(live) + ", but the kernel runs on device " +
                     std::to_string(c.device) + ", which has no peer access to device " + std::to_string(live.device) +
                     ": call cudaDeviceEnablePeerAccess(" + std::to_string(live.device) + ", 0) while device " +
                     std::to_string(c.device) +
                     " is current (cudaDeviceCanAccessPeer says whether it can), or copy the data with "
                     "cudaMemcpyPeerAsync",
                 pc, where);
  }
  if (!c.check) return MemorySpace::local;

  if (c.smem_map.holds(a, 1)) {
    access_fault(c, FaultKind::shared_overrun,
                 access_text(c, a, n, store) + " is " +
                     relative_to(a, n, c.smem.begin, c.smem.size,
                                 "the " + std::to_string(c.smem.size) + " bytes of dynamic shared memory given at launch"),
                 pc, where);
  }
  const auto own_lo = c.stack.begin;
  if (a < own_lo && a + 16 * page_size() >= own_lo)
    access_fault(c, FaultKind::stack_overflow,
                 access_text(c, a, n, store) + " is " + std::to_string(own_lo - a) +
                     " bytes below this thread's stack: a stack overflow (the simulated thread has " +
                     std::to_string(c.stack.size / 1024) + " KiB; raise SEG_SIM_STACK_KB)",
                 pc, where);
  unsigned other = 0;
  if (other_thread_stack(w, a, &other))
    access_fault(c, FaultKind::bad_address,
                 access_text(c, a, n, store) + " is in the stack (local variables) of thread " + std::to_string(other) +
                     " of the block; each thread's locals are private to it (pass data through shared memory)",
                 pc, where);
  if (in_loaded_image(a, n)) return MemorySpace::global;  // a __device__/__constant__ variable, a literal

  const AddressLookup look = look_up_address(a);
  if (look.freed) {
    // cudaFreeAsync frees when the executor reaches it, so its call stack is that of the host call
    // that ran the queue; say that it was a stream-ordered free.
    uintptr_t ordered_begin = 0;
    size_t ordered_bytes = 0;
    const bool stream_ordered = freed_by_stream_order(reinterpret_cast<const void*>(a), &ordered_begin, &ordered_bytes);
    access_fault(c, FaultKind::use_after_free,
                 access_text(c, a, n, store) + " is at byte offset " + std::to_string(a - look.freed_allocation.begin) +
                     " of " + allocation_text(look.freed_allocation) + ", which was freed by " +
                     (stream_ordered ? std::string("cudaFreeAsync before the kernel ran (a use after a stream-ordered "
                                                   "free; it ran in ") +
                                           describe_call_stack(look.freed_allocation.freed_by) + ")"
                                     : describe_call_stack(look.freed_allocation.freed_by)),
                 pc, where);
  }
  constexpr uintptr_t kNear = 1 << 20;  // closer than this to an allocation: an overrun of it
  if (look.has_before && a >= look.before.begin + look.before.bytes && a - (look.before.begin + look.before.bytes) < kNear)
    access_fault(c, FaultKind::out_of_bounds,
                 access_text(c, a, n, store) + " is " +
                     relative_to(a, n, look.before.begin, look.before.bytes, allocation_text(look.before)),
                 pc, where);
  if (look.has_after && a < look.after.begin && look.after.begin - a < kNear)
    access_fault(c, FaultKind::out_of_bounds,
                 access_text(c, a, n, store) + " is " +
                     relative_to(a, n, look.after.begin, look.after.bytes, allocation_text(look.after)),
                 pc, where);
  access_fault(c, FaultKind::bad_address,
               access_text(c, a, n, store) +
                   " is host memory: no device, managed or pinned allocation, shared memory, local variable, kernel "
                   "parameter or __device__ variable contains it. A kernel cannot dereference a host pointer; copy "
                   "the data into cudaMalloc'd memory (or allocate it with cudaHostAlloc)",
               pc, where);
}

// Adds [a, a + n) to the recorded accesses: extends one of the last few ranges when it continues it
// (a thread walking an array, or neighbouring threads reading neighbouring elements, while the
// kernel alternates between several arrays), else appends and compacts now and then.
inline void note_access(AccessContext& c, uintptr_t a, uint32_t n, bool store) {
  std::vector<Access>& t = c.touched;
  const size_t size = t.size();
  for (size_t i = size, seen = 0; i > 0 && seen < 4; --i, ++seen) {
    Access& last = t[i - 1];
    if (last.write != store) continue;
    if (a <= last.end && a + n >= last.begin) {
      last.begin = std::min(last.begin, a);
      last.end = std::max(last.end, a + n);
      return;
    }
  }
  t.push_back({a, a + n, store});
  if (t.size() >= c.compact_at) {
    t = merge_accesses(std::move(t));
    c.compact_at = std::max<size_t>(4096, 2 * t.size());
  }
}

// The common cases inline; returns the space (local, parameter, builtin: not counted).
inline MemorySpace classify(AccessContext& c, uintptr_t a, uint32_t n, bool store, uintptr_t pc, const Where* where) {
  if (c.stack.holds(a, n)) return MemorySpace::local;
  if (c.hits[0].holds(a, n) || c.hits[1].holds(a, n) || c.hits[2].holds(a, n) || c.hits[3].holds(a, n))
    return MemorySpace::global;
  if (c.builtins.holds(a, n)) return MemorySpace::builtin;
  if (c.shared[0].holds(a, n) || c.shared[1].holds(a, n) || c.smem.holds(a, n)) return MemorySpace::shared;
  if (c.params.holds(a, n)) return MemorySpace::parameter;  // every thread copies the arguments once
  return classify_slow(c, a, n, store, pc, where);
}

inline void on_access(uintptr_t a, uint32_t n, bool store, uintptr_t pc) {
  AccessContext* c = tls_access;
  if (!c) return;  // host code of a .cu file, or checks and counters off
  const MemorySpace space = classify(*c, a, n, store, pc, nullptr);
  if (c->record && space == MemorySpace::global) note_access(*c, a, n, store);
  if (c->count && (space == MemorySpace::global || space == MemorySpace::shared))
    count_access(*c->worker, *c->worker->current, space, a, n, store, pc);
}

// The built-in variables as one range when they are adjacent (the usual layout), else none.
Range builtin_range() {
  const uintptr_t p[4] = {reinterpret_cast<uintptr_t>(&threadIdx), reinterpret_cast<uintptr_t>(&blockIdx),
                          reinterpret_cast<uintptr_t>(&blockDim), reinterpret_cast<uintptr_t>(&gridDim)};
  const uintptr_t lo = std::min(std::min(p[0], p[1]), std::min(p[2], p[3]));
  const uintptr_t hi = std::max(std::max(p[0], p[1]), std::max(p[2], p[3])) + sizeof(dim3);
  return hi - lo <= 4 * sizeof(dim3) ? Range{lo, hi - lo} : Range{};
}

}  // namespace

void access_prepare_worker(Worker& w) {
  LaunchState& launch = *w.launch;
  AccessContext& c = tls_context;
  c = AccessContext{};
  c.worker = &w;
  c.check = launch.options.check_pointers;
  c.count = counting();
  c.builtins = builtin_range();
  c.smem = Range{reinterpret_cast<uintptr_t>(w.smem.base), w.smem.size};
  c.smem_map = Range{reinterpret_cast<uintptr_t>(w.smem.map), w.smem.map_size};
  const TlsBlock tls = executable_tls_block();
  c.tls = Range{tls.begin, tls.size};
  c.tls_objects = ProgramSymbols::get().has_symtab() && !ProgramSymbols::get().tls_objects().empty();
  const KernelInvoker* invoker = launch.request->invoker.get();
  c.params = Range{reinterpret_cast<uintptr_t>(invoker), invoker->storage_bytes()};
  c.device = launch.context.device;
  c.accessible_devices = launch.context.accessible_devices | (uint64_t{1} << (launch.context.device & 63));
  c.record = launch.context.record_accesses;
  // Without instrumentation only check_runtime_access uses the context; it is kept all the same.
  tls_access = (c.check || c.count || c.record) ? &c : nullptr;
}

void access_release_worker(Worker& w) {
  AccessContext& c = tls_context;
  if (c.record && !c.touched.empty()) {
    std::vector<Access> mine = merge_accesses(std::move(c.touched));
    std::lock_guard<std::mutex> lock(w.launch->mutex);
    w.launch->touched.insert(w.launch->touched.end(), mine.begin(), mine.end());
  }
  c.touched = {};
  c.record = false;
  tls_access = nullptr;
  c.worker = nullptr;
}

void access_switched_to(const SimThread& t) {
  AccessContext& c = tls_context;
  c.stack = Range{reinterpret_cast<uintptr_t>(t.fiber.stack_base()), t.fiber.stack_bytes()};
}

MemorySpace check_runtime_access(const void* p, size_t bytes, bool store, const char* what, const Where& where,
                                 bool record) {
  AccessContext* c = tls_access;
  if (!c || bytes == 0) return MemorySpace::global;
  const auto a = reinterpret_cast<uintptr_t>(p);
  c->op = what;
  // A fault unwinds through here (raise_fault); op is only read while building its report.
  const MemorySpace space = classify(*c, a, static_cast<uint32_t>(bytes), store, 0, &where);
  c->op = nullptr;
  if (record && c->record && space == MemorySpace::global) note_access(*c, a, static_cast<uint32_t>(bytes), store);
  return space;
}

void note_tile_access(MemorySpace space, const void* base, unsigned lines, unsigned line_bytes, size_t stride,
                      bool store) {
  AccessContext* c = tls_access;
  if (!c || !c->record || space != MemorySpace::global) return;
  const auto b = reinterpret_cast<uintptr_t>(base);
  for (unsigned i = 0; i < lines; ++i) note_access(*c, b + i * stride, line_bytes, store);
}

}  // namespace seg::sim::detail

#if SEG_SIM_INSTRUMENTED
// The entry points g++'s instrumentation calls (-fsanitize=kernel-address with
// asan-instrumentation-with-call-threshold=0: every access is a call). Only kernel code (the .cu
// files) is instrumented, so nothing else ever calls them.
extern "C" {
#define SEG_SIM_ACCESS_CALLBACKS(size)                                                                   \
  void __asan_load##size##_noabort(void* p) {                                                           \
    seg::sim::detail::on_access(reinterpret_cast<uintptr_t>(p), size, false,                            \
                                reinterpret_cast<uintptr_t>(__builtin_return_address(0)));              \
  }                                                                                                     \
  void __asan_store##size##_noabort(void* p) {                                                          \
    seg::sim::detail::on_access(reinterpret_cast<uintptr_t>(p), size, true,                             \
                                reinterpret_cast<uintptr_t>(__builtin_return_address(0)));              \
  }
SEG_SIM_ACCESS_CALLBACKS(1)
SEG_SIM_ACCESS_CALLBACKS(2)
SEG_SIM_ACCESS_CALLBACKS(4)
SEG_SIM_ACCESS_CALLBACKS(8)
SEG_SIM_ACCESS_CALLBACKS(16)
#undef SEG_SIM_ACCESS_CALLBACKS
void __asan_loadN_noabort(void* p, size_t n) {
  if (n)
    seg::sim::detail::on_access(reinterpret_cast<uintptr_t>(p), static_cast<uint32_t>(n), false,
                                reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
}
void __asan_storeN_noabort(void* p, size_t n) {
  if (n)
    seg::sim::detail::on_access(reinterpret_cast<uintptr_t>(p), static_cast<uint32_t>(n), true,
                                reinterpret_cast<uintptr_t>(__builtin_return_address(0)));
}
// Called before calls that do not return (a throw, __trap, a fault): nothing to clean up here.
void __asan_handle_no_return() {}
// Around the dynamic initialisation of a .cu file's globals (ASan's init-order checking): nothing
// to check here.
void __asan_before_dynamic_init(const char*) {}
void __asan_after_dynamic_init() {}
}
#endif
