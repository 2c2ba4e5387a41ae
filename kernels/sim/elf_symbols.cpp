#include "kernels/sim/elf_symbols.h"

#include <cxxabi.h>
#include <spawn.h>
#include <sys/wait.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/sim/spin_lock.h"

namespace seg::sim::detail {

namespace {

// The load address of the executable (PIE) and its TLS segment's virtual address.
struct MainModule {
  uintptr_t bias = 0;
  bool found = false;
};

int find_main_module(dl_phdr_info* info, size_t, void* data) {
  auto* m = static_cast<MainModule*>(data);
  // The first entry is the executable itself (empty name).
  m->bias = info->dlpi_addr;
  m->found = true;
  return 1;
}

}  // namespace

ProgramSymbols::ProgramSymbols() {
  MainModule main;
  dl_iterate_phdr(&find_main_module, &main);
  const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    close(fd);
    return;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  // Mapped for the life of the process: the symbol names point into it.
  void* m = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return;
  const char* image = static_cast<const char*>(m);
  Elf64_Ehdr eh;
  std::memcpy(&eh, image, sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shoff == 0 ||
      eh.e_shoff + static_cast<size_t>(eh.e_shnum) * eh.e_shentsize > size)
    return;
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, image + eh.e_shoff + i * eh.e_shentsize, sizeof sh);
    return sh;
  };
  // The full symbol table when present, the dynamic one otherwise.
  for (const uint32_t wanted : {static_cast<uint32_t>(SHT_SYMTAB), static_cast<uint32_t>(SHT_DYNSYM)}) {
    for (size_t i = 0; i < eh.e_shnum; ++i) {
      const Elf64_Shdr symtab = section(i);
      if (symtab.sh_type != wanted || symtab.sh_link >= eh.e_shnum) continue;
      const Elf64_Shdr strtab = section(symtab.sh_link);
      if (symtab.sh_offset + symtab.sh_size > size || strtab.sh_offset + strtab.sh_size > size) continue;
      const size_t count = symtab.sh_size / sizeof(Elf64_Sym);
      for (size_t k = 0; k < count; ++k) {
        Elf64_Sym sym;
        std::memcpy(&sym, image + symtab.sh_offset + k * sizeof sym, sizeof sym);
        if (sym.st_name >= strtab.sh_size || sym.st_shndx == SHN_UNDEF) continue;
        const char* name = image + strtab.sh_offset + sym.st_name;
        const unsigned type = ELF64_ST_TYPE(sym.st_info);
        if (type == STT_FUNC && sym.st_value != 0) {
          functions_.push_back({main.bias + sym.st_value, sym.st_size, name});
        } else if (type == STT_TLS) {
          tls_.push_back({sym.st_value, sym.st_size, name});
        }
      }
      if (wanted == SHT_SYMTAB) has_symtab_ = true;
    }
    if (!functions_.empty() || !tls_.empty()) break;
  }
  auto by_address = [](const ElfSymbol& a, const ElfSymbol& b) { return a.address < b.address; };
  std::sort(functions_.begin(), functions_.end(), by_address);
  std::sort(tls_.begin(), tls_.end(), by_address);
}

const ProgramSymbols& ProgramSymbols::get() {
  static const ProgramSymbols* symbols = new ProgramSymbols();  // never freed: used until exit
  return *symbols;
}

const ElfSymbol* ProgramSymbols::function_at(uintptr_t pc) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), pc,
                             [](uintptr_t a, const ElfSymbol& s) { return a < s.address; });
  if (it == functions_.begin()) return nullptr;
  --it;
  // Aliases share an address; any of them will do. Size 0 (assembly) covers nothing beyond itself.
  if (pc >= it->address + std::max<size_t>(it->size, 1)) return nullptr;
  return &*it;
}

const ElfSymbol* ProgramSymbols::function_starting_at(uintptr_t address) const {
  auto it = std::lower_bound(functions_.begin(), functions_.end(), address,
                             [](const ElfSymbol& s, uintptr_t a) { return s.address < a; });
  return it != functions_.end() && it->address == address ? &*it : nullptr;
}

const ElfSymbol* ProgramSymbols::tls_object_at_or_before(uintptr_t offset) const {
  auto it = std::upper_bound(tls_.begin(), tls_.end(), offset,
                             [](uintptr_t a, const ElfSymbol& s) { return a < s.address; });
  if (it == tls_.begin()) return nullptr;
  return &*--it;
}

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string s(d);
  std::free(d);
  return s;
}

std::string describe_code_address(uintptr_t pc) {
  char buf[40];
  const ElfSymbol* f = ProgramSymbols::get().function_at(pc);
  if (!f) {
    std::snprintf(buf, sizeof buf, "%#lx", static_cast<unsigned long>(pc));
    return buf;
  }
  std::snprintf(buf, sizeof buf, " + %#lx", static_cast<unsigned long>(pc - f->address));
  return demangle(f->name) + buf;
}

std::string source_line_of(uintptr_t pc) {
  MainModule main;
  dl_iterate_phdr(&find_main_module, &main);
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return "";
  exe[len] = '\0';
  char address[32];
  std::snprintf(address, sizeof address, "%#lx", static_cast<unsigned long>(pc - main.bias));
  int out[2];
  if (pipe(out) != 0) return "";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  char tool[] = "addr2line", dash_e[] = "-e", dash_i[] = "-i";
  char* argv[] = {tool, dash_e, exe, dash_i, address, nullptr};
  char* envp[] = {nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, tool, &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string text;
  if (rc == 0) {
    char buf[1024];
    ssize_t n;
    while ((n = read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    int status = 0;
    waitpid(pid, &status, 0);
  }
  close(out[0]);
  // The first line is the innermost (inlined) frame: "/path/file.cu:12" or "??:?" / "??:0".
  const std::string first = text.substr(0, text.find('\n'));
  if (first.empty() || first[0] == '?' || first.find(":?") != std::string::npos ||
      first.find(":0") == first.size() - 2)
    return "";
  const size_t discriminator = first.find(" (discriminator");
  const std::string location = discriminator == std::string::npos ? first : first.substr(0, discriminator);
  // Line tables name files as the compiler saw them ("/repo/build/tests/sim/../../../tests/..."):
  // fold the "dir/.." steps.
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= location.size()) {
    const size_t slash = std::min(location.find('/', start), location.size());
    const std::string part = location.substr(start, slash - start);
    if (part == ".." && !parts.empty() && parts.back() != ".." && !parts.back().empty())
      parts.pop_back();
    else if (part != ".")
      parts.push_back(part);
    start = slash + 1;
  }
  std::string folded;
  for (size_t i = 0; i < parts.size(); ++i) folded += (i ? "/" : "") + parts[i];
  return folded;
}

namespace {

int find_tls(dl_phdr_info* info, size_t, void* data) {
  auto* block = static_cast<TlsBlock*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type != PT_TLS) continue;
    block->begin = reinterpret_cast<uintptr_t>(info->dlpi_tls_data);
    block->size = block->begin ? info->dlpi_phdr[i].p_memsz : 0;
  }
  return 1;  // the executable comes first
}

struct Segment {
  uintptr_t begin, end;
};
SpinLock g_segments_lock;  // read from simulated threads (spin_lock.h)
std::vector<Segment>* g_segments = nullptr;

int collect_segments(dl_phdr_info* info, size_t, void* data) {
  auto* segments = static_cast<std::vector<Segment>*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    segments->push_back({begin, begin + ph.p_memsz});
  }
  return 0;
}

bool segments_contain(const std::vector<Segment>& segments, uintptr_t address, size_t bytes) {
  for (const Segment& s : segments)
    if (address >= s.begin && address + bytes <= s.end) return true;
  return false;
}

}  // namespace

TlsBlock executable_tls_block() {
  TlsBlock block;
  dl_iterate_phdr(&find_tls, &block);
  return block;
}

bool in_loaded_image(uintptr_t address, size_t bytes) {
  SpinGuard lock(g_segments_lock);
  if (g_segments && segments_contain(*g_segments, address, bytes)) return true;
  // Not found: a library may have been loaded since the list was made.
  auto* fresh = new std::vector<Segment>();
  dl_iterate_phdr(&collect_segments, fresh);
  delete g_segments;
  g_segments = fresh;
  return segments_contain(*g_segments, address, bytes);
}

}  // namespace seg::sim::detail
