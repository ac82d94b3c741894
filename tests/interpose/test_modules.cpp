// The modules read from /proc/self/maps (interpose/modules.h, mapped_modules) are those the loader lists
// (loaded_modules), with the same base and load bias: a fault's place is the same whichever list names it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "interpose/modules.h"

namespace asynccheck {
namespace {

TEST(Modules, MappedAgreeWithTheLoaderOnEveryModuleAndItsBias) {
  const std::vector<Module> mapped = mapped_modules();
  const std::vector<Module> loaded = loaded_modules();
  size_t files = 0;
  for (const Module& l : loaded) {
    if (l.path.empty() || l.path[0] != '/') continue;  // the vDSO: no file
    ++files;
    SCOPED_TRACE(l.path);
    const auto it =
        std::find_if(mapped.begin(), mapped.end(), [&](const Module& m) { return m.base <= l.base && l.base < m.end; });
    ASSERT_NE(it, mapped.end()) << "no mapped module holds " << std::hex << l.base;
    EXPECT_EQ(it->bias, l.bias);
    EXPECT_EQ(it->base, l.base);
    // The same file, though the loader may name it by another path (/lib is a link to /usr/lib on Debian).
    EXPECT_EQ(std::filesystem::canonical(it->path), std::filesystem::canonical(l.path));
  }
  EXPECT_GE(files, 3u);  // the test itself, libc, the loader at least
  // This function's own code lies in the test's module.
  const auto here = reinterpret_cast<uint64_t>(&mapped_modules);
  const auto it =
      std::find_if(mapped.begin(), mapped.end(), [&](const Module& m) { return m.base <= here && here < m.end; });
  ASSERT_NE(it, mapped.end());
  EXPECT_NE(it->path.find("test_interpose"), std::string::npos) << it->path;
}

}  // namespace
}  // namespace asynccheck
