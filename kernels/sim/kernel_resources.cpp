#include "kernels/sim/kernel_resources.h"

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/sim/elf_symbols.h"

namespace seg::sim::detail {

namespace {

struct Registry {
  std::mutex mutex;  // host side only: tables register before main, lookups at the end of launches
  std::vector<const NvccResources*> entries;
  std::map<std::string, const NvccResources*> by_name;  // demangled, built on the first lookup
  size_t indexed = 0;
  std::map<const void*, KernelResources> cache;
};

Registry& registry() {
  static Registry* r = new Registry();  // never freed: tables register during static initialisation
  return *r;
}

// The anonymous namespace of the kernel's file has a different name in nvcc ("_GLOBAL__N__9ce0..."),
// which the demangler prints as "(anonymous namespace)" too; nothing else needs normalising.
std::string key_of(const char* mangled) { return demangle(mangled); }

// Sum of the kernel's block-scope static arrays: thread_local symbols named _ZZ<kernel>E<name>.
bool static_smem_from_symbols(const char* kernel_mangled, size_t* bytes) {
  if (std::strncmp(kernel_mangled, "_Z", 2) != 0) return false;
  const std::string prefix = std::string("_ZZ") + (kernel_mangled + 2) + "E";
  size_t total = 0;
  for (const ElfSymbol& s : ProgramSymbols::get().tls_objects())
    if (std::strncmp(s.name, prefix.c_str(), prefix.size()) == 0) total += s.size;
  *bytes = total;
  return true;
}

}  // namespace

NvccResourceTable::NvccResourceTable(const NvccResources* entries, size_t count) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < count; ++i) r.entries.push_back(&entries[i]);
}

KernelResources kernel_resources(const void* kernel) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (auto it = r.cache.find(kernel); it != r.cache.end()) return it->second;
  for (; r.indexed < r.entries.size(); ++r.indexed)
    r.by_name.emplace(key_of(r.entries[r.indexed]->mangled), r.entries[r.indexed]);
  KernelResources res;
  const ElfSymbol* sym = ProgramSymbols::get().function_starting_at(reinterpret_cast<uintptr_t>(kernel));
  if (sym) {
    res.name = demangle(sym->name);
    if (auto it = r.by_name.find(res.name); it != r.by_name.end()) {
      res.registers = it->second->registers;
      res.static_smem_bytes = static_cast<size_t>(it->second->static_smem_bytes);
      res.static_smem_known = true;
      res.source = "nvcc sm_90";
    } else if (static_smem_from_symbols(sym->name, &res.static_smem_bytes)) {
      res.static_smem_known = true;
      res.source = "symbol table";
    }
  }
  r.cache.emplace(kernel, res);
  return res;
}

}  // namespace seg::sim::detail
