// Explains a SIGSEGV that happens inside a simulated kernel, then lets the previous handler (or the
// default action) deal with it. Without this a simulated out-of-bounds access dies with a bare
// "Segmentation fault". The three guard pages the simulator sets up give precise messages:
//   * dynamic shared memory: an access past the launched size (dynamic_smem.cpp);
//   * device allocations: an access past the end of a cudaMalloc'd buffer (device_memory.cpp);
//   * fiber stacks: a simulated thread overflowed its stack (fiber.h).
// Outside a kernel, a fault inside a device allocation is host code dereferencing device memory
// (closed to host code by host_access.cpp): the report names the allocation, the cudaMalloc call
// site and the faulting instruction (as an offset for addr2line).
// Not installed under ASan, whose own report is better. Everything here is async-signal-safe: the
// message is assembled in a fixed buffer and written with write(2).
#include <dlfcn.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/sanitizer_hooks.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

namespace {

struct sigaction g_previous;
size_t g_page = 4096;
// The object the runtime is linked into (the test or program executable), for code offsets.
const char* g_object_path = "";
uintptr_t g_object_base = 0;

class Message {
 public:
  Message& text(const char* s) {
    while (*s && n_ < sizeof buf_ - 1) buf_[n_++] = *s++;
    return *this;
  }
  Message& number(uint64_t v) {
    char digits[24];
    int k = 0;
    do {
      digits[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (k && n_ < sizeof buf_ - 1) buf_[n_++] = digits[--k];
    return *this;
  }
  Message& hex(uint64_t v) {
    char digits[20];
    int k = 0;
    do {
      digits[k++] = "0123456789abcdef"[v % 16];
      v /= 16;
    } while (v);
    text("0x");
    while (k && n_ < sizeof buf_ - 1) buf_[n_++] = digits[--k];
    return *this;
  }
  // A code address as "exe+0x1234 (addr2line -f -C -e exe 0x1234)".
  Message& code(uintptr_t address) {
    if (!g_object_base || address < g_object_base) return hex(address);
    const uint64_t offset = address - g_object_base;
    const char* name = g_object_path;
    for (const char* c = g_object_path; *c; ++c)
      if (*c == '/') name = c + 1;
    text(name).text("+").hex(offset);
    return text(" (addr2line -f -C -e ").text(g_object_path).text(" ").hex(offset).text(")");
  }
  Message& dims(unsigned x, unsigned y, unsigned z) {
    return text("(").number(x).text(",").number(y).text(",").number(z).text(")");
  }
  void write_out() {
    ssize_t ignored = ::write(2, buf_, n_);
    (void)ignored;
  }

 private:
  char buf_[1024];
  size_t n_ = 0;
};

// Host code touched a device allocation: explain it. False when the address is not device memory.
bool explain_host_access(const char* addr, void* context) {
  AllocationInfo a;
  uintptr_t begin = 0;
  size_t bytes = 0;
  Message m;
  m.text("seg::sim: invalid memory access (SIGSEGV) in host code\n");
  if (try_find_allocation(addr, &a) && a.kind == MemoryKind::device) {
    m.text("  host code dereferenced device memory: the address ")
        .hex(reinterpret_cast<uintptr_t>(addr))
        .text(" is ")
        .number(reinterpret_cast<uintptr_t>(addr) - a.begin)
        .text(" bytes into a ")
        .number(a.bytes)
        .text("-byte device allocation (device ")
        .number(static_cast<uint64_t>(a.device))
        .text(")\n  host code cannot read or write device memory: copy it with cudaMemcpy\n");
    if (a.caller)
      m.text("  the allocation was made by code at ").code(reinterpret_cast<uintptr_t>(a.caller)).text("\n");
  } else if (guard_page_owner(addr, &begin, &bytes)) {
    m.text("  host code accessed the address ")
        .number(reinterpret_cast<uintptr_t>(addr) - begin)
        .text(" bytes after the start of a ")
        .number(bytes)
        .text("-byte device allocation (past its end, and device memory is not host memory)\n");
  } else if (freed_block_owner(addr, &begin, &bytes)) {
    m.text("  host code accessed the address ")
        .number(reinterpret_cast<uintptr_t>(addr) - begin)
        .text(" bytes into a freed ")
        .number(bytes)
        .text("-byte device allocation (a use after free, and device memory is not host memory)\n");
  } else {
    return false;
  }
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  m.text("  the faulting instruction is at ").code(static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP])).text("\n");
#else
  (void)context;
#endif
  m.write_out();
  return true;
}

// Whether the faulting thread's stack pointer is below its stack: a frame larger than the guard
// page jumps over it, and the fault is then wherever the next push lands.
bool stack_pointer_below(const SimThread& t, void* context) {
#if defined(__x86_64__)
  const auto sp = static_cast<uintptr_t>(static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_RSP]);
  const auto base = reinterpret_cast<uintptr_t>(t.fiber.stack_base());
  return base && sp < base && base - sp < (uintptr_t{1} << 30);
#else
  (void)t, (void)context;
  return false;
#endif
}

void on_segv(int sig, siginfo_t* info, void* context) {
  Worker* w = current_worker();
  if (!(w && w->current && w->launch)) explain_host_access(static_cast<const char*>(info->si_addr), context);
  if (w && w->current && w->launch) {
    const char* addr = static_cast<const char*>(info->si_addr);
    const SimThread& t = *w->current;
    const LaunchRequest& r = *w->launch->request;
    Message m;
    m.text("seg::sim: invalid memory access (SIGSEGV) in a simulated kernel\n");
    uintptr_t begin = 0;
    size_t bytes = 0;
    if (w->smem.guard && addr >= w->smem.guard && addr < w->smem.guard + g_page) {
      m.text("  the address is ")
          .number(static_cast<uint64_t>(addr - w->smem.base))
          .text(" bytes after the start of the ")
          .number(w->smem.size)
          .text(" bytes of dynamic shared memory given at launch: an access past its end\n");
    } else if (t.fiber.in_guard_page(addr) || stack_pointer_below(t, context)) {
      m.text("  stack overflow: the simulated thread used its whole ")
          .number(t.fiber.stack_bytes() / 1024)
          .text(" KiB stack (raise SEG_SIM_STACK_KB)\n");
    } else if (guard_page_owner(addr, &begin, &bytes)) {
      m.text("  the address is ")
          .number(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(addr) - begin))
          .text(" bytes after the start of a ")
          .number(bytes)
          .text("-byte device allocation: an access past its end\n");
    } else if (freed_block_owner(addr, &begin, &bytes)) {
      m.text("  the address is ")
          .number(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(addr) - begin))
          .text(" bytes into a freed ")
          .number(bytes)
          .text("-byte device allocation: a use after free\n");
    }
    m.text("  in kernel ")
        .text(r.kernel_name)
        .text(" launched at ")
        .text(relative_path(r.file))
        .text(":")
        .number(static_cast<uint64_t>(r.line))
        .text(", block ")
        .dims(w->block.idx.x, w->block.idx.y, w->block.idx.z)
        .text(", thread ")
        .dims(t.tid.x, t.tid.y, t.tid.z)
        .text("\n");
    m.write_out();
  }
  // Hand over to whoever handled SIGSEGV before (doctest prints the test name, then re-raises).
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) {
      g_previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default action: restore it and return; the faulting access runs again and kills the process.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGSEGV, &dfl, nullptr);
}

}  // namespace

void install_segv_handler() {
  if (san::asan) return;
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = &on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    g_page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    Dl_info self;
    if (dladdr(reinterpret_cast<void*>(&install_segv_handler), &self) && self.dli_fname) {
      g_object_path = self.dli_fname;
      g_object_base = reinterpret_cast<uintptr_t>(self.dli_fbase);
      // The main executable may be named by how it was started (even "/proc/self/exe"): its real path.
      static char exe[1024];
      const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
      if (n > 0 && (!std::strchr(g_object_path, '/') || std::strcmp(g_object_path, "/proc/self/exe") == 0)) {
        exe[n] = '\0';
        g_object_path = exe;
      }
    }
    sigaction(SIGSEGV, &sa, &g_previous);
  });
  // A stack overflow leaves no stack to run the handler on: give this OS thread an alternate
  // signal stack unless it has one (doctest installs one on the main thread).
  thread_local bool checked = false;
  if (!checked) {
    checked = true;
    stack_t current;
    if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE)) {
      constexpr size_t kAltStack = 64 * 1024;
      stack_t s;
      s.ss_sp = new char[kAltStack];  // lives as long as the thread; never freed
      s.ss_size = kAltStack;
      s.ss_flags = 0;
      sigaltstack(&s, nullptr);
    }
  }
}

}  // namespace seg::sim::detail
