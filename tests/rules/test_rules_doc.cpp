// docs/rules.md is generated from the catalog; this test fails when the two drift apart.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "rules/catalog.h"
#include "rules/rules_markdown.h"

#ifndef ASYNCCHECK_SOURCE_DIR
#error "ASYNCCHECK_SOURCE_DIR must name the source tree (set by tests/rules/CMakeLists.txt)"
#endif

namespace {

using namespace asynccheck::rules;

constexpr const char* kRegenerate = "regenerate it with `asynccheck --list-rules=markdown > docs/rules.md`";

// The first line where the two texts differ, for a readable failure message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(sa, la));
    const bool gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "the texts differ only in their final newline";
    if (!ga || !gb || la != lb) {
      return "line " + std::to_string(line) + ":\n  docs/rules.md: " + (ga ? la : "<end of file>") +
             "\n  generated:     " + (gb ? lb : "<end of text>");
    }
  }
}

TEST(RulesDoc, CheckedInFileIsUpToDate) {
  const std::string path = std::string(ASYNCCHECK_SOURCE_DIR) + "/docs/rules.md";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << path << "; " << kRegenerate;
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string on_disk = buf.str();
  const std::string generated = rules_markdown();
  EXPECT_TRUE(on_disk == generated) << path << " is out of date with the rule catalog; " << kRegenerate
                                    << "\nfirst difference at " << first_difference(on_disk, generated);
}

TEST(RulesDoc, HasEveryRule) {
  const std::string md = rules_markdown();
  EXPECT_EQ(md, rules_markdown());  // deterministic
  EXPECT_EQ(md.rfind("# ", 0), 0u) << "starts with a title";
  for (std::string_view level : {"**none**", "**note**", "**warning**", "**error**"}) {
    EXPECT_NE(md.find(level), std::string::npos) << level;
  }
  for (const Rule& r : all_rules()) {
    const std::string id(r.id);
    EXPECT_NE(md.find("\n### " + id + "\n"), std::string::npos) << id << ": no section";
    EXPECT_NE(md.find("| [`" + id + "`](#" + id + ") | " + std::string(level_name(r.level)) + " | "), std::string::npos)
        << id << ": no summary row";
    EXPECT_NE(md.find("(<" + std::string(r.url) + ">)"), std::string::npos) << id << ": no link";
  }
  // Catalog prose is escaped where Markdown would read it as markup.
  EXPECT_NE(md.find("cudaMemcpy\\*Async"), std::string::npos);
  EXPECT_NE(md.find("CUDA_LAUNCH_BLOCKING"), std::string::npos);
}

}  // namespace
