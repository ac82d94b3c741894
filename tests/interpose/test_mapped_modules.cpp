// The modules read from /proc/self/maps (interpose/mapped_modules.h) are those dl_iterate_phdr gives, with the same
// load bias: a fault's place is the same whichever list names it.
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <string>
#include <vector>

#include "interpose/mapped_modules.h"

namespace asynccheck {
namespace {

struct Loaded {
  std::string path;
  uint64_t bias, lo, hi;
};

std::vector<Loaded> from_loader() {
  std::vector<Loaded> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
          lo = std::min<uint64_t>(lo, info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
          hi = std::max<uint64_t>(hi, info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz);
        }
        std::string path = info->dlpi_name ? info->dlpi_name : "";
        if (path.empty()) {  // the program itself
          char buf[PATH_MAX];
          const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
          if (n > 0) path.assign(buf, static_cast<size_t>(n));
        }
        if (lo < hi && !path.empty() && path[0] == '/')
          static_cast<std::vector<Loaded>*>(data)->push_back({path, info->dlpi_addr, lo, hi});
        return 0;
      },
      &out);
  return out;
}

TEST(MappedModules, AgreeWithTheLoaderOnEveryModuleAndItsBias) {
  const std::vector<Module> mapped = mapped_modules();
  const std::vector<Loaded> loaded = from_loader();
  ASSERT_GE(loaded.size(), 3u);  // the test itself, libc, the loader at least
  for (const Loaded& l : loaded) {
    SCOPED_TRACE(l.path);
    const auto it =
        std::find_if(mapped.begin(), mapped.end(), [&](const Module& m) { return m.base <= l.lo && l.lo < m.end; });
    ASSERT_NE(it, mapped.end()) << "no mapped module holds " << std::hex << l.lo;
    EXPECT_EQ(it->bias, l.bias);
    EXPECT_EQ(it->base, l.lo);
    // The same file, though the loader may name it by another path (/lib is a link to /usr/lib on Debian).
    EXPECT_EQ(std::filesystem::canonical(it->path), std::filesystem::canonical(l.path));
  }
  // This function's own code lies in the test's module.
  const auto here = reinterpret_cast<uint64_t>(&from_loader);
  const auto it =
      std::find_if(mapped.begin(), mapped.end(), [&](const Module& m) { return m.base <= here && here < m.end; });
  ASSERT_NE(it, mapped.end());
  EXPECT_NE(it->path.find("test_interpose"), std::string::npos) << it->path;
}

}  // namespace
}  // namespace asynccheck
