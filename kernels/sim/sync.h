// Block-level synchronisation for simulated kernels: __syncthreads and its count/and/or variants,
// memory fences, __nanosleep, clock64, __trap.
//
// __syncthreads is a counting barrier over the block's live threads (exited threads are not waited
// for, as on sm_70+). In strict mode (the default) a barrier that completes after some threads
// exited, or that threads reach at different call sites, is a fault: the CUDA programming guide
// makes both undefined. Each call records its source line, so a deadlock report says where every
// thread waits. Fences are real fences (blocks may run on parallel workers); the simulation is
// otherwise sequentially consistent, so missing fences are not detected.
#pragma once

#include <chrono>
#include <source_location>

#include "kernels/sim/device_runtime.h"

inline void __syncthreads(const std::source_location& where = std::source_location::current()) {
  seg::sim::detail::block_barrier(seg::sim::detail::BarrierOp::sync, 1, where);
}
inline int __syncthreads_count(int predicate, const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::block_barrier(seg::sim::detail::BarrierOp::count, predicate, where);
}
inline int __syncthreads_and(int predicate, const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::block_barrier(seg::sim::detail::BarrierOp::all, predicate, where);
}
inline int __syncthreads_or(int predicate, const std::source_location& where = std::source_location::current()) {
  return seg::sim::detail::block_barrier(seg::sim::detail::BarrierOp::any, predicate, where);
}

inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

namespace seg::sim::detail {
// Lets the other runnable threads of the block run before the caller continues.
void yield_thread();
}  // namespace seg::sim::detail

// A yield point: a thread spinning on a flag that another thread of the block sets must let that
// thread run (fibers are never preempted). Spin loops without __nanosleep hang the simulation.
inline void __nanosleep(unsigned) { seg::sim::detail::yield_thread(); }

inline long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] inline void __trap(const std::source_location& where = std::source_location::current()) {
  seg::sim::detail::fault(seg::sim::FaultKind::trap, "__trap() called", where);
}
