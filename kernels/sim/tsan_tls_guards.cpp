// TSan builds only: tells TSan that g++'s guard bytes of block-scope thread_local arrays are not a
// data race between simulated threads.
//
// `__shared__ __half tile[64];` becomes `thread_local __half tile[64];`, and g++ guards a
// block-scope thread_local array of class type with a hidden TLS byte (`_ZGVZ...`) that the first
// thread to reach the declaration sets. All fibers of a block share the OS thread's TLS, so TSan
// sees the first fiber write that byte and the others read it, unordered: a false report in the
// first block of every kernel with such an array. The guard symbols are found in the executable's
// symbol table (they are in the same TLS segment as `threadIdx`, which gives this thread's base
// address), and each guard byte is declared a benign race for this OS thread. Needs an unstripped
// executable; kernels linked from a shared library are not covered.
#include <elf.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/sim/builtins.h"
#include "kernels/sim/sanitizer_hooks.h"

#if SEG_SIM_TSAN
extern "C" void AnnotateBenignRaceSized(const char* file, int line, const volatile void* address, long size,
                                        const char* description);
#endif

namespace seg::sim::detail {

#if SEG_SIM_TSAN
namespace {

struct TlsSymbols {
  bool found_anchor = false;
  uint64_t anchor = 0;           // TLS offset of threadIdx
  std::vector<uint64_t> guards;  // TLS offsets of guard bytes
};

// Reads the static symbol table of /proc/self/exe.
TlsSymbols read_tls_symbols() {
  TlsSymbols result;
  FILE* f = std::fopen("/proc/self/exe", "rb");
  if (!f) return result;
  std::vector<char> image;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) image.insert(image.end(), buf, buf + n);
  std::fclose(f);
  if (image.size() < sizeof(Elf64_Ehdr)) return result;
  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64) return result;
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, image.data() + eh.e_shoff + i * eh.e_shentsize, sizeof sh);
    return sh;
  };
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr symtab = section(i);
    if (symtab.sh_type != SHT_SYMTAB) continue;
    const Elf64_Shdr strtab = section(symtab.sh_link);
    for (size_t k = 0; k < symtab.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym sym;
      std::memcpy(&sym, image.data() + symtab.sh_offset + k * sizeof sym, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_TLS) continue;
      const char* name = image.data() + strtab.sh_offset + sym.st_name;
      if (std::strcmp(name, "threadIdx") == 0) {
        result.anchor = sym.st_value;
        result.found_anchor = true;
      } else if (std::strncmp(name, "_ZGV", 4) == 0) {
        result.guards.push_back(sym.st_value);
      }
    }
  }
  return result;
}

}  // namespace
#endif

void annotate_tls_guards_for_this_thread() {
#if SEG_SIM_TSAN
  static std::once_flag once;
  static TlsSymbols symbols;
  std::call_once(once, [] { symbols = read_tls_symbols(); });
  thread_local bool done = false;
  if (done || !symbols.found_anchor) return;
  done = true;
  const char* base = reinterpret_cast<const char*>(&threadIdx) - symbols.anchor;
  for (const uint64_t offset : symbols.guards)
    AnnotateBenignRaceSized(__FILE__, __LINE__, base + offset, 1,
                            "g++ guard byte of a block-scope thread_local (a __shared__ array)");
#endif
}

}  // namespace seg::sim::detail
