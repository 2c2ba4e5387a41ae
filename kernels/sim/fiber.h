// Fibers: the execution contexts that the simulator runs the CUDA threads of a block on.
//
// A Fiber owns a stack (mmap'd, with a PROT_NONE guard page below it, so an overflow faults instead
// of corrupting a neighbour) and a saved machine context. switch_fiber(from, to) saves the running
// context into `from` and resumes `to`; it returns when some other fiber switches back to `from`.
// Nothing is preemptive: a fiber runs until it calls switch_fiber.
//
// Two context-switch implementations, chosen at run time (Options::switch_impl):
//   * x86-64 assembly (default on x86-64): saves the six callee-saved registers, MXCSR and the x87
//     control word, then swaps stack pointers. About 25 ns a switch.
//   * POSIX ucontext (swapcontext): portable, but it makes a signal-mask system call on every
//     switch (over a microsecond), so switch-heavy kernels run tens of times slower.
// Both are annotated for ASan and TSan (sanitizer_hooks.h).
//
// Every OS thread that runs blocks has one "host" fiber: a Fiber object standing for its own stack,
// made with Fiber::host(); simulated threads switch back to it when no thread can run.
#pragma once

#include <cstddef>
#include <memory>

namespace seg::sim::detail {

enum class SwitchImpl { assembly, ucontext };

// True when this build has the assembly switch (x86-64); otherwise only ucontext exists.
bool has_assembly_switch();

class Fiber {
 public:
  using Entry = void (*)(void* arg);

  Fiber();
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // The calling OS thread's own context (no stack of its own).
  static std::unique_ptr<Fiber> host();

  // Prepares a fresh context on a new stack of `stack_bytes` that will call entry(arg) when first
  // switched to. entry must never return (it switches away for good instead). Calling start again
  // throws the old stack away; that is how fibers abandoned mid-kernel (after a fault) are reset.
  void start(Entry entry, void* arg, size_t stack_bytes, SwitchImpl impl, const char* name);

  SwitchImpl impl() const { return impl_; }

  // Whether `addr` lies in this fiber's guard page (used to explain a SIGSEGV as a stack overflow).
  bool in_guard_page(const void* addr) const;
  size_t stack_bytes() const { return stack_size_; }
  // Lowest usable address of the stack (the guard page is just below); null for a host fiber.
  const void* stack_base() const { return stack_base_; }

  friend void switch_fiber(Fiber& from, Fiber& to);

 private:
  struct Impl;  // the ucontext_t lives here, out of line
  static void entry_trampoline(void* self);
  static void ucontext_entry(int hi, int lo);
  [[noreturn]] static void run_entry(Fiber* fiber);
  void release_stack();

  bool is_host_ = false;
  SwitchImpl impl_ = SwitchImpl::assembly;
  void* saved_sp_ = nullptr;  // assembly switch: the stack pointer of a suspended fiber
  std::unique_ptr<Impl> uc_;  // ucontext switch
  void* map_base_ = nullptr;  // mmap'd region: guard page + stack
  size_t map_size_ = 0;
  void* stack_base_ = nullptr;  // lowest usable stack address (just above the guard page)
  size_t stack_size_ = 0;
  Entry entry_ = nullptr;
  void* arg_ = nullptr;
  void* tsan_fiber_ = nullptr;         // TSan's handle for this context
  void* asan_fake_stack_ = nullptr;    // ASan's fake stack of this fiber while it is suspended
  const void* asan_bottom_ = nullptr;  // stack bounds as ASan needs them (host: learned at switch)
  size_t asan_size_ = 0;
};

void switch_fiber(Fiber& from, Fiber& to);

}  // namespace seg::sim::detail
