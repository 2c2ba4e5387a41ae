// A spin lock for the runtime's shared bookkeeping that simulated threads read (internal).
//
// Not a mutex: under TSan a pthread mutex taken by two simulated threads would be a happens-before
// edge between them that CUDA does not have, and would hide their races. The runtime is compiled
// without TSan instrumentation (CMakeLists.txt), so this lock is invisible to TSan. try_lock serves
// the SIGSEGV handler, which must not wait.
#pragma once

#include <atomic>

namespace seg::sim::detail {

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

// Holds a SpinLock for a scope.
class SpinGuard {
 public:
  explicit SpinGuard(SpinLock& lock) : lock_(lock) { lock_.lock(); }
  ~SpinGuard() { lock_.unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace seg::sim::detail
