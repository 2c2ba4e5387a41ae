// Pointer checks of kernel code (internal; user guide: docs/cuda-simulator.md, "Pointer checks").
//
// In the default build g++ compiles the simulated .cu files with -fsanitize=kernel-address in
// callback mode (kernels/sim/CMakeLists.txt): every load and store of kernel code first calls
// __asan_{load,store}{1,2,4,8,16,N}_noabort(address[, size]), which access_check.cpp defines.
// The callback knows the running simulated thread, and accepts the access only if it lies inside
//   * the thread's own stack (its locals),
//   * a live device, managed or pinned host allocation of a device the launch may access (the
//     launching device and its peers),
//   * the block's dynamic shared memory as launched, or one static __shared__ array (a
//     thread_local of the OS thread; its bounds come from the executable's symbol table),
//   * the built-in variables (threadIdx, ...), the kernel's parameters, or the program's static
//     data (__device__ and __constant__ variables, string literals).
// Anything else stops the thread with a KernelFault naming the kernel, block, thread, address,
// access size, source line and what the address is: a host pointer, a freed allocation (with the
// call stack of the free), N bytes past the end of (or before) an allocation, beyond the launched
// dynamic shared memory or a static shared array, another thread's locals, another device's memory.
// Valid accesses are also what the counters count (counter_hooks.h).
//
// The runtime itself is not instrumented; code it runs for kernels (WMMA tile loads and stores,
// cp.async copies) calls check_runtime_access instead. Under ASan and TSan the instrumentation is
// off: there only those runtime checks, the guard pages and the sanitizer itself remain.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/sim/counter_hooks.h"
#include "kernels/sim/device_runtime.h"

namespace seg::sim::detail {

struct Worker;
struct SimThread;

// On the worker's OS thread, before it runs its first block of a launch / after its last.
void access_prepare_worker(Worker& w);
void access_release_worker(Worker& w);
// Before the simulated thread `t` runs (called at every switch).
void access_switched_to(const SimThread& t);

// Checks [p, p + bytes), accessed by the runtime on behalf of the calling simulated thread, like an
// access of kernel code; faults (KernelFault) when it is invalid. `what` names the operation
// ("wmma::load_matrix_sync"). Returns the memory space (global or shared; local for the stack).
// A global access is also recorded for the stream race detector (LaunchContext::record_accesses)
// unless `record` is false: a strided WMMA tile is checked as one span but recorded line by line
// (note_tile_access), so the gaps between its lines are not taken as touched.
MemorySpace check_runtime_access(const void* p, size_t bytes, bool store, const char* what, const Where& where,
                                 bool record = true);
// Records the `lines` runs of `line_bytes` bytes, `stride` apart from `base`, that a WMMA tile
// operation of the calling simulated thread's warp moved (global memory only; see above).
void note_tile_access(MemorySpace space, const void* base, unsigned lines, unsigned line_bytes, size_t stride,
                      bool store);

}  // namespace seg::sim::detail
