// Sanitizer hooks of the simulator runtime (internal header; kernels never include it).
//
// The simulator runs the threads of a block as fibers on one OS thread, switching stacks by hand.
// AddressSanitizer and ThreadSanitizer must be told about every switch, or they misread the stack
// (ASan) or treat all fibers as one thread and see no race at all (TSan). This header wraps the
// public sanitizer interfaces so that the rest of the runtime calls plain functions that compile to
// nothing in a build without the sanitizer:
//   * ASan: __sanitizer_start/finish_switch_fiber around each switch; poison/unpoison of memory the
//     kernel must not touch (dynamic shared memory beyond the launched size).
//   * TSan: one TSan fiber per simulated thread, switched without synchronisation, so that the only
//     happens-before edges between simulated threads are the ones CUDA gives: barriers, warp
//     collectives, block and launch boundaries (hb_release / hb_acquire). The runtime's own
//     bookkeeping is shared by all fibers of a block; the runtime is compiled without TSan
//     instrumentation (kernels/sim/CMakeLists.txt), so TSan never sees those accesses.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define SEG_SIM_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#else
#define SEG_SIM_ASAN 0
#endif

// The runtime itself is compiled without TSan instrumentation (kernels/sim/CMakeLists.txt), where
// __SANITIZE_THREAD__ is not defined; the build defines SEG_SIM_TSAN_BUILD instead.
#if defined(__SANITIZE_THREAD__) || defined(SEG_SIM_TSAN_BUILD)
#define SEG_SIM_TSAN 1
#include <sanitizer/tsan_interface.h>
#else
#define SEG_SIM_TSAN 0
#endif

namespace seg::sim::detail::san {

constexpr bool asan = SEG_SIM_ASAN;
constexpr bool tsan = SEG_SIM_TSAN;

// ---- ASan ---------------------------------------------------------------------------------------
inline void start_switch(void** fake_stack_save, const void* to_bottom, size_t to_size) {
#if SEG_SIM_ASAN
  __sanitizer_start_switch_fiber(fake_stack_save, to_bottom, to_size);
#else
  (void)fake_stack_save, (void)to_bottom, (void)to_size;
#endif
}
inline void finish_switch(void* fake_stack_save, const void** from_bottom, size_t* from_size) {
#if SEG_SIM_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_save, from_bottom, from_size);
#else
  (void)fake_stack_save, (void)from_bottom, (void)from_size;
#endif
}
inline void poison(const void* p, size_t n) {
#if SEG_SIM_ASAN
  ASAN_POISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}
inline void unpoison(const void* p, size_t n) {
#if SEG_SIM_ASAN
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
  (void)p, (void)n;
#endif
}

// ---- TSan ---------------------------------------------------------------------------------------
inline void* current_fiber() {
#if SEG_SIM_TSAN
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}
inline void* create_fiber() {
#if SEG_SIM_TSAN
  return __tsan_create_fiber(0);
#else
  return nullptr;
#endif
}
inline void destroy_fiber(void* f) {
#if SEG_SIM_TSAN
  if (f) __tsan_destroy_fiber(f);
#else
  (void)f;
#endif
}
// Must be called immediately before the stack switch itself.
inline void switch_to_fiber(void* f) {
#if SEG_SIM_TSAN
  __tsan_switch_to_fiber(f, __tsan_switch_to_fiber_no_sync);
#else
  (void)f;
#endif
}
inline void set_fiber_name(void* f, const char* name) {
#if SEG_SIM_TSAN
  __tsan_set_fiber_name(f, name);
#else
  (void)f, (void)name;
#endif
}
// A happens-before edge: everything before hb_release(x) happens before everything after a later
// hb_acquire(x) (on any fiber).
inline void hb_release(void* sync_object) {
#if SEG_SIM_TSAN
  __tsan_release(sync_object);
#else
  (void)sync_object;
#endif
}
inline void hb_acquire(void* sync_object) {
#if SEG_SIM_TSAN
  __tsan_acquire(sync_object);
#else
  (void)sync_object;
#endif
}

}  // namespace seg::sim::detail::san
