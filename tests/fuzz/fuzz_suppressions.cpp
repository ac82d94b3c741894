// Fuzz target: the suppression file parser and the glob matcher (`--suppressions FILE`; the file is edited by
// people and lives in repos).
// Properties: parse_suppressions never crashes, hangs or allocates without bound; it fails with a message; what
// it accepts matches fabricated call sites without crashing and gives an index in range. glob_match, on the
// input's first line as the pattern and the rest as the text, terminates quickly (no exponential backtracking)
// and agrees with the obvious cases.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "report/suppressions.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using asynccheck::report::Frame;
using asynccheck::report::SiteRow;

Frame frame(std::string function, std::string file, std::string module, uint64_t ip) {
  Frame f;
  f.ip = ip;
  f.function = std::move(function);
  f.file = std::move(file);
  f.module = std::move(module);
  f.line = 79;
  return f;
}

// Three sites: an ordinary symbolized one, one without symbols or stack, and one named by the input itself.
std::vector<SiteRow> rows(std::string_view text) {
  std::vector<SiteRow> out(3);
  out[0].rule = asynccheck::rules::RuleId::UndocumentedBlock;
  out[0].api = "cudaMemcpyAsync";
  out[0].site.frame = frame("main", "/src/samples/seed000_answer.cu", "/build/samples/seed000_answer", 0x401234);
  out[0].site.frames = {frame("helper(int)", "/src/samples/helper.h", "/build/samples/seed000_answer", 0x401100),
                        out[0].site.frame};
  out[0].count = 3;
  out[1].api = "cudaFree";
  out[1].count = 1;
  const std::string mine(text.substr(0, 256));
  out[2].api = mine;
  out[2].site.frame = frame(mine, mine, mine, 1);
  out[2].site.frames = {out[2].site.frame, frame("", "", "", 2)};
  out[2].count = 1;
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // glob_match: first line is the pattern, the rest the text.
  const size_t nl = text.find('\n');
  const std::string_view pattern = text.substr(0, nl);
  const std::string_view subject = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  const bool matched = asynccheck::report::glob_match(pattern, subject);
  if (pattern.find_first_of("*?") == std::string_view::npos) {
    FUZZ_CHECK(matched == (pattern == subject), "a pattern without wildcards must match exactly itself");
  }
  FUZZ_CHECK(asynccheck::report::glob_match("*", subject), "'*' must match everything");
  FUZZ_CHECK(asynccheck::report::glob_match(subject, subject) || subject.find_first_of("*?") != std::string_view::npos,
             "a text without wildcards must match itself");

  std::vector<asynccheck::report::SuppressionUse> sups;
  std::string error;
  if (!asynccheck::report::parse_suppressions(text, "fuzz.supp", sups, error)) {
    FUZZ_CHECK(!error.empty(), "parse_suppressions failed without a message");
    FUZZ_CHECK(sups.empty(), "parse_suppressions failed but changed its output");
    return 0;
  }
  for (const SiteRow& row : rows(subject)) {
    const int i = asynccheck::report::match_suppression(sups, row);
    FUZZ_CHECK(i >= -1 && i < static_cast<int>(sups.size()), "match_suppression returned %d for %zu suppressions", i,
               sups.size());
  }
  return 0;
}
