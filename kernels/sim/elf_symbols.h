// The running executable's own symbol table, for the simulator's reports and counters (internal).
//
// Read once, on first use, from /proc/self/exe (mapped, not copied): the function symbols give the
// names of kernels (their mangled names key the nvcc resource table, kernel_resources.h) and of
// the code that freed a buffer or made a bad access; the TLS object symbols are the static
// `__shared__` arrays (qualifiers.h makes them thread_local), so an access can be checked against
// the array's own bounds and reported with its name. A stripped executable has no .symtab: then
// only the dynamic symbols are known, reports show addresses, and static shared memory is checked
// against the whole TLS block instead of each array (access_check.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace seg::sim::detail {

struct ElfSymbol {
  uintptr_t address = 0;  // run-time address (functions), or offset in the executable's TLS block (TLS)
  size_t size = 0;
  const char* name = "";  // mangled
};

class ProgramSymbols {
 public:
  // The symbols of the executable, loaded on the first call (thread-safe).
  static const ProgramSymbols& get();

  // The function whose code contains `pc`, or null.
  const ElfSymbol* function_at(uintptr_t pc) const;
  // The function symbol at exactly `address` (a kernel's entry point), or null.
  const ElfSymbol* function_starting_at(uintptr_t address) const;
  // TLS objects sorted by offset (block-scope thread_locals, i.e. static __shared__ arrays, and the
  // runtime's own thread_locals).
  const std::vector<ElfSymbol>& tls_objects() const { return tls_; }
  // The TLS object containing `offset`, else the last one before it (null if none).
  const ElfSymbol* tls_object_at_or_before(uintptr_t offset) const;
  bool has_symtab() const { return has_symtab_; }

 private:
  ProgramSymbols();
  std::vector<ElfSymbol> functions_;  // sorted by address
  std::vector<ElfSymbol> tls_;        // sorted by offset
  bool has_symtab_ = false;
};

// "seg::sim::foo(int)" for "_ZN3seg3sim3fooEi"; the input when it is not a mangled name.
std::string demangle(const char* name);
// "function + 0x1a" (demangled), or the bare address when no symbol covers it.
std::string describe_code_address(uintptr_t pc);

// "file:line" of the code at `pc` (the innermost inlined frame), from the executable's line tables
// through addr2line (binutils); "" when either is missing (a build without -g/-g1). Slow: it starts
// a process. For fault reports only.
std::string source_line_of(uintptr_t pc);

// The executable's TLS block for the calling OS thread: [begin, begin + size). Size 0 if none.
struct TlsBlock {
  uintptr_t begin = 0;
  size_t size = 0;
};
TlsBlock executable_tls_block();

// Whether `address` lies in a loaded segment of the program or of a shared library (static data:
// __device__ and __constant__ variables, string literals, tables). Slow: for reports and rare paths.
bool in_loaded_image(uintptr_t address, size_t bytes);

}  // namespace seg::sim::detail
