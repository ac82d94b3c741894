#include "interpose/modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

namespace asynccheck {
namespace {

struct Mapping {
  uint64_t lo = 0, hi = 0;
  bool readable = false, executable = false;
  uint64_t offset = 0;
};

// The load bias of the ELF image whose header is mapped at [m.lo, m.hi): where it was mapped less the virtual
// address of the loadable segment that holds the header (file offset 0), page-aligned. False when it is not ELF.
bool bias_of(const Mapping& m, uint64_t& bias) {
  if (!m.readable || m.offset != 0 || m.hi - m.lo < sizeof(ElfW(Ehdr))) return false;
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(m.lo);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return false;
  if (eh->e_phoff == 0 || eh->e_phentsize != sizeof(ElfW(Phdr)) ||
      eh->e_phoff + uint64_t{eh->e_phnum} * sizeof(ElfW(Phdr)) > m.hi - m.lo) {
    return false;
  }
  const auto* ph = reinterpret_cast<const ElfW(Phdr)*>(m.lo + eh->e_phoff);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
      bias = m.lo - (ph[i].p_vaddr & ~(page - 1));
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<Module> loaded_modules() {
  std::vector<Module> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* mods = static_cast<std::vector<Module>*>(data);
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          lo = std::min<uint64_t>(lo, info->dlpi_addr + ph.p_vaddr);
          hi = std::max<uint64_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (lo >= hi) return 0;
        std::string path = info->dlpi_name ? info->dlpi_name : "";
        if (path.empty()) {  // the main program
          char buf[4096];
          ssize_t len = readlink("/proc/self/exe", buf, sizeof buf - 1);
          if (len > 0) path.assign(buf, static_cast<size_t>(len));
        }
        mods->push_back(Module{lo, hi, info->dlpi_addr, path});
        return 0;
      },
      &out);
  return out;
}

std::vector<Module> mapped_modules() {
  std::vector<Module> out;
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return out;
  std::map<std::string, std::vector<Mapping>> by_path;
  char line[4096 + 256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    Mapping m;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &m.lo, &m.hi, perms, &m.offset,
                    &path_at) < 4 ||
        path_at <= 0 || line[path_at] != '/') {
      continue;  // anonymous, [heap], [stack], [vdso]: no file
    }
    std::string path(line + path_at);
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
    m.readable = perms[0] == 'r';
    m.executable = perms[2] == 'x';
    by_path[path].push_back(m);
  }
  std::fclose(f);
  for (const auto& [path, maps] : by_path) {
    // Only files with code: a data file the program mapped is not read (one truncated since would fault).
    bool code = false;
    for (const Mapping& m : maps) code = code || m.executable;
    if (!code) continue;
    // Each image mapped from its first byte, with the mappings that follow it up to the next such one (a file
    // mapped twice is two modules).
    for (size_t i = 0; i < maps.size(); ++i) {
      uint64_t bias = 0;
      if (!bias_of(maps[i], bias)) continue;
      Module mod{maps[i].lo, maps[i].hi, bias, path};
      for (size_t j = i + 1; j < maps.size() && maps[j].offset != 0; ++j) mod.end = maps[j].hi;
      out.push_back(mod);
    }
  }
  return out;
}

}  // namespace asynccheck
