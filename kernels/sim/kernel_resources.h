// Registers and static shared memory per kernel, for the counters and the occupancy estimate
// (internal).
//
// The simulator cannot know how many registers nvcc gives a kernel. When nvcc is present at build
// time, CMake runs it once per simulated .cu file with `--resource-usage` for sm_90
// (kernels/sim/resource_usage.cmake) and compiles the result into a table that the .cu file
// registers at start-up (NvccResourceTable). A kernel is found in it by its demangled name (nvcc
// and g++ mangle alike, except for the names of anonymous namespaces). Without nvcc, or for a
// kernel nvcc did not report, registers are unknown (-1), and the static shared memory comes from
// the executable's symbol table: the sizes of the kernel's block-scope `__shared__` arrays.
#pragma once

#include <cstddef>
#include <string>

namespace seg::sim::detail {

// One line of nvcc's report: ptxas's "Used R registers, ..., S bytes smem" for an entry function.
struct NvccResources {
  const char* mangled;
  int registers;
  int static_smem_bytes;
  int stack_frame_bytes;
  int spill_bytes;  // spill stores + loads
};

// A generated table registers itself through a static object of this type.
class NvccResourceTable {
 public:
  NvccResourceTable(const NvccResources* entries, size_t count);
};

struct KernelResources {
  std::string name;             // demangled, when the symbol is known
  int registers = -1;           // per thread, sm_90; -1: unknown
  size_t static_smem_bytes = 0;
  bool static_smem_known = false;
  const char* source = "unknown";  // "nvcc sm_90" or "symbol table"
};

// The resources of the kernel whose entry point is `kernel` (cached).
KernelResources kernel_resources(const void* kernel);

}  // namespace seg::sim::detail
