#include "kernels/sim/fiber.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "kernels/sim/sanitizer_hooks.h"

namespace seg::sim::detail {

#if defined(__x86_64__)
void* prepare_assembly_stack(void* stack_base, size_t stack_size, void (*entry)(void*), void* arg);
extern "C" void seg_sim_switch_context(void** save_sp, void* load_sp);
bool has_assembly_switch() { return true; }
#else
bool has_assembly_switch() { return false; }
#endif

struct Fiber::Impl {
  ucontext_t context;
};

namespace {

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "seg::sim: fatal: %s\n", what);
  std::abort();
}

// The fiber that switched to the one now starting or resuming; finish_switch records its stack
// bounds (that is how the host fiber's bounds become known to ASan).
thread_local Fiber* tls_switch_source = nullptr;

}  // namespace

Fiber::Fiber() = default;

Fiber::~Fiber() {
  release_stack();
  if (!is_host_) san::destroy_fiber(tsan_fiber_);
}

std::unique_ptr<Fiber> Fiber::host() {
  auto f = std::make_unique<Fiber>();
  f->is_host_ = true;
  f->uc_ = std::make_unique<Impl>();
  f->tsan_fiber_ = san::current_fiber();
  return f;
}

void Fiber::release_stack() {
  if (map_base_) munmap(map_base_, map_size_);
  map_base_ = stack_base_ = nullptr;
  map_size_ = stack_size_ = 0;
}

void Fiber::start(Entry entry, void* arg, size_t stack_bytes, SwitchImpl impl, const char* name) {
  if (is_host_) die("Fiber::start on a host fiber");
  if (impl == SwitchImpl::assembly && !has_assembly_switch()) impl = SwitchImpl::ucontext;
  // A new mapping every time: munmap also makes the sanitizers forget the old stack's history, so
  // a fiber abandoned mid-kernel leaves no stale poisoning (ASan) or access history (TSan) behind.
  release_stack();
  const size_t page = page_size();
  const size_t usable = (stack_bytes + page - 1) / page * page;
  map_size_ = usable + page;
  map_base_ =
      mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (map_base_ == MAP_FAILED) {
    map_base_ = nullptr;
    throw std::bad_alloc();
  }
  if (mprotect(map_base_, page, PROT_NONE) != 0) die("mprotect of a fiber guard page failed");
  stack_base_ = static_cast<char*>(map_base_) + page;
  stack_size_ = usable;
  san::unpoison(stack_base_, stack_size_);
  asan_bottom_ = stack_base_;
  asan_size_ = stack_size_;
  asan_fake_stack_ = nullptr;

  entry_ = entry;
  arg_ = arg;
  impl_ = impl;
  san::destroy_fiber(tsan_fiber_);
  tsan_fiber_ = san::create_fiber();
  san::set_fiber_name(tsan_fiber_, name);

  if (impl == SwitchImpl::assembly) {
#if defined(__x86_64__)
    saved_sp_ = prepare_assembly_stack(stack_base_, stack_size_, &Fiber::entry_trampoline, this);
#endif
  } else {
    if (!uc_) uc_ = std::make_unique<Impl>();
    if (getcontext(&uc_->context) != 0) die("getcontext failed");
    uc_->context.uc_stack.ss_sp = stack_base_;
    uc_->context.uc_stack.ss_size = stack_size_;
    uc_->context.uc_link = nullptr;
    const auto p = reinterpret_cast<uintptr_t>(this);
    makecontext(&uc_->context, reinterpret_cast<void (*)()>(&Fiber::ucontext_entry), 2, static_cast<int>(p >> 32),
                static_cast<int>(p & 0xFFFFFFFFu));
    // makecontext has built the stack frame; swapcontext only restores registers. Forgetting the
    // stack here stops ASan's swapcontext interceptor from clearing the whole stack's shadow on
    // every switch (an mmap and two madvise calls each time; it also erased live redzones).
    uc_->context.uc_stack.ss_sp = nullptr;
    uc_->context.uc_stack.ss_size = 0;
  }
}

bool Fiber::in_guard_page(const void* addr) const {
  if (!map_base_) return false;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  const auto lo = reinterpret_cast<uintptr_t>(map_base_);
  return a >= lo && a < lo + page_size();
}

// makecontext passes int arguments only: the Fiber pointer travels split in two halves.
void Fiber::ucontext_entry(int hi, int lo) {
  const uintptr_t p = (static_cast<uintptr_t>(static_cast<uint32_t>(hi)) << 32) | static_cast<uint32_t>(lo);
  run_entry(reinterpret_cast<Fiber*>(p));
}

// First code a fresh fiber runs (both switch implementations).
void Fiber::entry_trampoline(void* self) { run_entry(static_cast<Fiber*>(self)); }

void Fiber::run_entry(Fiber* fiber) {
  Fiber* source = tls_switch_source;
  san::finish_switch(nullptr, &source->asan_bottom_, &source->asan_size_);
  fiber->entry_(fiber->arg_);
  die("a fiber entry function returned");
}

void switch_fiber(Fiber& from, Fiber& to) {
  san::start_switch(&from.asan_fake_stack_, to.asan_bottom_, to.asan_size_);
  tls_switch_source = &from;
  san::switch_to_fiber(to.tsan_fiber_);
  // All fibers of one host use the same implementation; the host's context is saved in the form of
  // the fiber it talks to, so the implementation is that of whichever side is not the host.
  const SwitchImpl impl = to.is_host_ ? from.impl_ : to.impl_;
#if defined(__x86_64__)
  if (impl == SwitchImpl::assembly) {
    seg_sim_switch_context(&from.saved_sp_, to.saved_sp_);
  } else
#endif
  {
    if (!from.uc_) from.uc_ = std::make_unique<Fiber::Impl>();
    if (swapcontext(&from.uc_->context, &to.uc_->context) != 0) die("swapcontext failed");
  }
  // Resumed: some fiber switched back to `from`.
  san::finish_switch(from.asan_fake_stack_, &tls_switch_source->asan_bottom_, &tls_switch_source->asan_size_);
}

}  // namespace seg::sim::detail
