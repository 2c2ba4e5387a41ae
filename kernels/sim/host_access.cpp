// Host dereferences of device memory are faults, as on a GPU system (where a device pointer is not
// a valid host address): device allocations are closed to host code -- PROT_NONE pages, or ASan
// poison in ASan builds -- except while a host thread runs queued device work (kernels, copies,
// memsets) in the stream executor. Host code that reads or writes through a device pointer then
// gets a SIGSEGV, which signals.cpp explains ("host code dereferenced device memory ... copy it with
// cudaMemcpy"), or an ASan use-after-poison report followed by the same explanation (below).
//
// Managed memory (cudaMallocManaged) and pinned host memory stay accessible: host code may use
// them. SEG_SIM_HOST_FAULTS=0 (Options::host_access_faults) leaves device memory open, e.g. to
// inspect it in a debugger. Limit: while one host thread runs device work, device memory is open
// to every thread, so another thread's host dereference at that moment is not caught.
#include <cstdio>
#include <mutex>

#include "kernels/sim/device_memory.h"
#include "kernels/sim/sanitizer_hooks.h"
#include "kernels/sim/stream_executor.h"
#include "kernels/sim/worker.h"

namespace seg::sim::detail {

namespace {

std::mutex g_mutex;
int g_open = 0;  // host threads running device work now
thread_local bool tls_open = false;

}  // namespace

void open_device_memory() {
  if (tls_open) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_open++ == 0) set_device_memory_accessible(true);
  tls_open = true;
}

void close_device_memory() {
  if (!tls_open) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  tls_open = false;
  if (--g_open == 0) set_device_memory_accessible(!options().host_access_faults);
}

void apply_host_access_policy() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_open == 0) set_device_memory_accessible(!options().host_access_faults);
}

}  // namespace seg::sim::detail

#if SEG_SIM_ASAN
// ASan calls this when it finds an error, before its report: when the bad address lies inside a
// closed device allocation and no kernel is running, the culprit is host code.
extern "C" void __asan_on_error() {
  using namespace seg::sim::detail;
  const void* addr = __asan_get_report_address();
  Worker* w = current_worker();
  if (!addr || (w && w->current)) return;
  AllocationInfo info;
  if (!try_find_allocation(addr, &info) || info.kind != MemoryKind::device) return;
  const auto offset = static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(addr) - info.begin);
  std::fprintf(stderr,
               "seg::sim: host code dereferenced device memory: the address %p is %llu bytes into a %zu-byte "
               "device allocation (device %d) at %p; host code cannot read or write device memory, copy it with "
               "cudaMemcpy (the stack below shows where)\n",
               addr, offset, info.bytes, info.device, reinterpret_cast<void*>(info.begin));
}
#endif
