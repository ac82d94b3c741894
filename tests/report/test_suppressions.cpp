// Suppression files (suppressions.h) and baselines (baseline.h) on fabricated call sites: every error message
// pinned, the glob on edge cases and hostile patterns, matching, hit counts, fingerprints and the round trip.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "report/baseline.h"
#include "report/suppressions.h"
#include "rules/catalog.h"

namespace asynccheck::report {
namespace {

using rules::RuleId;

Frame make_frame(const std::string& function, const std::string& file, const std::string& module, int line = 10) {
  Frame f;
  f.ip = 0x401000;
  f.function = function;
  f.file = file;
  f.line = line;
  f.module = module;
  return f;
}

SiteRow make_row(RuleId rule, const std::string& api, const Frame& f, uint64_t count = 1) {
  SiteRow row;
  row.rule = rule;
  row.api = api;
  row.site.frame = f;
  row.site.frames = {f};
  row.count = count;
  return row;
}

// A cudaFree inside a third-party library, called from the application's main.
SiteRow third_party_free(uint64_t count = 1) {
  SiteRow row = make_row(RuleId::FreeWaitsForDevice, "cudaFree",
                         make_frame("foo::release(void*)", "/src/foo/release.cpp", "/opt/foo/lib/libfoo.so"), count);
  row.site.frames.push_back(make_frame("main", "/home/me/app/main.cu", "/home/me/app/build/app", 42));
  return row;
}

std::vector<SuppressionUse> parse_ok(const std::string& text) {
  std::vector<SuppressionUse> out;
  std::string error;
  EXPECT_TRUE(parse_suppressions(text, "s.supp", out, error)) << error;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Suppression files: every error, exactly.

struct BadInput {
  const char* name;
  std::string text;
  std::string error;
};

std::ostream& operator<<(std::ostream& o, const BadInput& b) { return o << b.name; }

std::string lines_of(size_t n, const std::string& line) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += line + "\n";
  return out;
}

const std::vector<BadInput>& bad_suppressions() {
  static const std::vector<BadInput> cases = {
      {"missing_colon", "free-waits-for-device libfoo.so\n",
       "s.supp:1: missing ':' between rule and pattern in 'free-waits-for-device libfoo.so' (valid: RULE:PATTERN, e.g. "
       "free-waits-for-device:libfoo.so)"},
      {"missing_colon_counts_comment_and_blank_lines", "# header\n\n  \ncudaFree\n",
       "s.supp:4: missing ':' between rule and pattern in 'cudaFree' (valid: RULE:PATTERN, e.g. "
       "free-waits-for-device:libfoo.so)"},
      {"colon_only_in_comment", "free-waits-for-device # :libfoo.so\n",
       "s.supp:1: missing ':' between rule and pattern in 'free-waits-for-device' (valid: RULE:PATTERN, e.g. "
       "free-waits-for-device:libfoo.so)"},
      {"empty_rule", ":libfoo.so\n",
       "s.supp:1: empty rule before ':' (valid: a rule id from `asynccheck --list-rules` or '*')"},
      {"empty_pattern", "free-waits-for-device:\n",
       "s.supp:1: empty pattern after 'free-waits-for-device:' (valid: a glob over API, function, file or module; '*' "
       "matches every site)"},
      {"blank_pattern_before_comment", "*:   # everything\n",
       "s.supp:1: empty pattern after '*:' (valid: a glob over API, function, file or module; '*' matches every site)"},
      {"unknown_rule_with_suggestions", "free-device-syncs:libfoo.so\n",
       "s.supp:1: unknown rule 'free-device-syncs' (valid: a rule id or '*'; did you mean 'free-waits-for-device', "
       "'explicit-sync-device' or 'implicit-sync-device-alloc'? `asynccheck --list-rules` lists them all)"},
      {"unknown_rule_typo", "copy-async-pagable-h2d:*\n",
       "s.supp:1: unknown rule 'copy-async-pagable-h2d' (valid: a rule id or '*'; did you mean "
       "'copy-async-pageable-h2d', "
       "'copy-sync-pageable-h2d' or 'copy-async-pageable-d2h'? `asynccheck --list-rules` lists them all)"},
      {"unknown_rule_without_suggestions", "zzzz:foo\n",
       "s.supp:1: unknown rule 'zzzz' (valid: a rule id or '*'; run `asynccheck --list-rules` to list them)"},
      {"unknown_rule_is_case_sensitive", "Copy-H2H:foo\n",
       "s.supp:1: unknown rule 'Copy-H2H' (valid: a rule id or '*'; did you mean 'copy-h2h', 'copy-d2d' or "
       "'copy-sync-d2h'? `asynccheck --list-rules` lists them all)"},
      {"unknown_rule_long_is_cut", std::string(100, 'x') + ":foo\n",
       "s.supp:1: unknown rule '" + std::string(64, 'x') +
           "...' (valid: a rule id or '*'; run `asynccheck --list-rules` to list them)"},
      {"rule_glob_is_not_a_rule", "copy-*:foo\n",
       "s.supp:1: rule 'copy-*' is a glob, only patterns are (valid: one rule id from `asynccheck --list-rules`, or "
       "'*' alone for every rule)"},
      {"rule_question_mark", "copy-h2?:foo\n",
       "s.supp:1: rule 'copy-h2?' is a glob, only patterns are (valid: one rule id from `asynccheck --list-rules`, or "
       "'*' alone for every rule)"},
      {"pattern_too_long", "*:" + std::string(4097, 'a') + "\n",
       "s.supp:1: pattern is 4097 bytes long (valid: at most 4096)"},
      {"line_too_long", "*:" + std::string(8191, 'a') + "\n",
       "s.supp:1: line is 8193 bytes long (valid: at most 8192)"},
      {"line_too_long_even_if_comment", "\n# " + std::string(8191, 'a'),
       "s.supp:2: line is 8193 bytes long (valid: at most 8192)"},
      {"nul_byte", std::string("*:foo\0bar\n", 10), "s.supp:1: NUL byte at column 6 (valid: a text file)"},
      {"control_character", "\n*:foo\x1b[0m\n",
       "s.supp:2: control character 0x1B at column 6 (valid: printable text and tabs)"},
      {"carriage_return_inside_line", "*:foo\rbar\n",
       "s.supp:1: control character 0x0D at column 6 (valid: printable text and tabs)"},
      {"too_many_lines", lines_of(10'000, "# fine") + "*:foo\n",
       "s.supp:10001: more than 10000 lines (valid: at most 10000)"},
  };
  return cases;
}

class BadSuppressions : public testing::TestWithParam<BadInput> {};

TEST_P(BadSuppressions, FailsWithExactMessageAndLeavesOutputUnchanged) {
  std::vector<SuppressionUse> out = parse_ok("*:keep\n");
  std::string error;
  EXPECT_FALSE(parse_suppressions(GetParam().text, "s.supp", out, error));
  EXPECT_EQ(error, GetParam().error);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pattern, "keep");
}

INSTANTIATE_TEST_SUITE_P(Errors, BadSuppressions, testing::ValuesIn(bad_suppressions()),
                         [](const testing::TestParamInfo<BadInput>& i) { return std::string(i.param.name); });

// ---------------------------------------------------------------------------------------------------------------
// Suppression files: what is valid.

TEST(SuppressionParse, EmptyAndCommentOnlyFilesHoldNoSuppression) {
  EXPECT_TRUE(parse_ok("").empty());
  EXPECT_TRUE(parse_ok("\n\n   \n\t\n").empty());
  EXPECT_TRUE(parse_ok("# only comments\n  # indented\n#*:foo\n").empty());
}

TEST(SuppressionParse, TrimsWhitespaceAndRecordsOrigins) {
  const auto sups =
      parse_ok("# third-party code\n\n  free-waits-for-device : libfoo.so  \r\n*:operator new(unsigned long)\n");
  ASSERT_EQ(sups.size(), 2u);
  EXPECT_EQ(sups[0].rule, "free-waits-for-device");
  EXPECT_EQ(sups[0].pattern, "libfoo.so");
  EXPECT_EQ(sups[0].origin, "s.supp:3");
  EXPECT_EQ(sups[1].rule, "*");
  EXPECT_EQ(sups[1].pattern, "operator new(unsigned long)");  // inner spaces belong to the pattern
  EXPECT_EQ(sups[1].origin, "s.supp:4");
  EXPECT_EQ(sups[0].sites + sups[0].calls + sups[1].sites + sups[1].calls, 0u);
}

TEST(SuppressionParse, SplitsAtTheFirstColonSoPatternsMayHoldScopes) {
  const auto sups = parse_ok("explicit-sync-device:ns::Trainer::step*");
  ASSERT_EQ(sups.size(), 1u);
  EXPECT_EQ(sups[0].rule, "explicit-sync-device");
  EXPECT_EQ(sups[0].pattern, "ns::Trainer::step*");
}

TEST(SuppressionParse, HashStartsACommentOnlyAtLineStartOrAfterWhitespace) {
  const auto sups = parse_ok("*:main::{lambda()#1}::operator()  # the loader thread\n*:a#b\t# tab before\n");
  ASSERT_EQ(sups.size(), 2u);
  EXPECT_EQ(sups[0].pattern, "main::{lambda()#1}::operator()");
  EXPECT_EQ(sups[1].pattern, "a#b");
}

TEST(SuppressionParse, AcceptsEveryRuleIdAndBoundsExactly) {
  for (const rules::Rule& r : rules::all_rules()) {
    EXPECT_EQ(parse_ok(std::string(r.id) + ":x").size(), 1u) << r.id;
  }
  EXPECT_EQ(parse_ok("*:" + std::string(4096, 'a')).size(), 1u);
  EXPECT_EQ(parse_ok(" *:" + std::string(4096, 'a') + std::string(8192 - 4099, ' ')).size(), 1u);  // 8192 bytes
  EXPECT_EQ(parse_ok(lines_of(9'999, "# fine") + "*:foo").size(), 1u);                             // 10000 lines
  EXPECT_EQ(parse_ok("*:caf\xc3\xa9.so").size(), 1u);                                              // UTF-8 passes
}

TEST(SuppressionParse, AppendsToEarlierFiles) {
  std::vector<SuppressionUse> out;
  std::string error;
  ASSERT_TRUE(parse_suppressions("*:a\n", "one.supp", out, error));
  ASSERT_TRUE(parse_suppressions("*:b\n", "two.supp", out, error));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].origin, "one.supp:1");
  EXPECT_EQ(out[1].origin, "two.supp:1");
}

TEST(SuppressionLoad, ReadsAFile) {
  const std::string path = std::string(ASYNCCHECK_BINARY_DIR) + "/test_suppressions.supp";
  std::ofstream(path) << "# ok\nfree-waits-for-device:libfoo.so\n";
  std::vector<SuppressionUse> out;
  std::string error;
  ASSERT_TRUE(load_suppressions(path, out, error)) << error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].origin, path + ":2");
}

TEST(SuppressionLoad, ErrorsNameTheFileAndLine) {
  const std::string path = std::string(ASYNCCHECK_BINARY_DIR) + "/test_suppressions_bad.supp";
  std::ofstream(path) << "*:ok\nnope\n";
  std::vector<SuppressionUse> out;
  std::string error;
  EXPECT_FALSE(load_suppressions(path, out, error));
  EXPECT_EQ(error, path +
                       ":2: missing ':' between rule and pattern in 'nope' (valid: RULE:PATTERN, e.g. "
                       "free-waits-for-device:libfoo.so)");
  EXPECT_TRUE(out.empty());
}

TEST(SuppressionLoad, UnreadableFiles) {
  std::vector<SuppressionUse> out;
  std::string error;
  EXPECT_FALSE(load_suppressions("/nonexistent/asynccheck.supp", out, error));
  EXPECT_EQ(error, "cannot read suppression file '/nonexistent/asynccheck.supp': No such file or directory");
  EXPECT_FALSE(load_suppressions("/", out, error));
  EXPECT_EQ(error, "cannot read suppression file '/': it is a directory (valid: a regular file)");
  EXPECT_FALSE(load_suppressions("/dev/zero", out, error));  // endless input: refused before reading
  EXPECT_EQ(error, "cannot read suppression file '/dev/zero': it is a character device (valid: a regular file)");
  // A FIFO with no writer: opening it would block forever (issue 22).
  const std::string fifo = ::testing::TempDir() + "asynccheck-supp-fifo";
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(load_suppressions(fifo, out, error));
  EXPECT_EQ(error, "cannot read suppression file '" + fifo + "': it is a FIFO (valid: a regular file)");
  unlink(fifo.c_str());
  const std::string big = ::testing::TempDir() + "asynccheck-supp-big";
  std::ofstream(big) << std::string(4194305, '#');
  EXPECT_FALSE(load_suppressions(big, out, error));
  EXPECT_EQ(error, "cannot read suppression file '" + big + "': larger than 4194304 bytes (valid: at most 4194304)");
  unlink(big.c_str());
  EXPECT_TRUE(out.empty());
}

// ---------------------------------------------------------------------------------------------------------------
// Glob.

struct GlobCase {
  const char* pattern;
  const char* text;
  bool match;
};

TEST(Glob, EdgeCases) {
  const GlobCase cases[] = {
      {"", "", true},
      {"", "a", false},
      {"*", "", true},
      {"*", "anything", true},
      {"**", "", true},
      {"?", "", false},
      {"?", "a", true},
      {"?", "ab", false},
      {"??", "ab", true},
      {"a", "a", true},
      {"a", "A", false},
      {"a", "ab", false},
      {"ab", "a", false},
      {"a*", "a", true},
      {"a*", "abc", true},
      {"a*", "ba", false},
      {"*a", "ba", true},
      {"*a", "ab", false},
      {"a*c", "abbbc", true},
      {"a*c", "abbb", false},
      {"*a*", "bab", true},
      {"*a*", "bbb", false},
      {"a?c", "abc", true},
      {"a?c", "ac", false},
      {"*?", "", false},
      {"*?", "x", true},
      {"?*?", "x", false},
      {"?*?", "xy", true},
      {"lib*.so", "libfoo.so", true},
      {"lib*.so", "libfoo.so.1", false},
      {"lib*.so*", "libfoo.so.1", true},
      {"*.cu", "/a/b/main.cu", true},
      {"*/third_party/*", "/src/third_party/x.cc", true},
      {"a*b*c", "abxbxc", true},
      {"a*b*c", "acb", false},
      {"*ab", "aab", true},
      {"*aab", "aaab", true},
      {"ns::*::run", "ns::A::B::run", true},
      {"[ab]", "a", false},
      {"[ab]", "[ab]", true},
  };
  for (const GlobCase& c : cases) {
    EXPECT_EQ(glob_match(c.pattern, c.text), c.match) << "'" << c.pattern << "' vs '" << c.text << "'";
  }
}

TEST(Glob, PathologicalPatternsGiveTheRightAnswer) {
  const std::string as(100'000, 'a');
  EXPECT_FALSE(glob_match("*a*a*a*a*a*b", as));
  EXPECT_TRUE(glob_match("*a*a*a*a*a*a", as));
  EXPECT_FALSE(glob_match(std::string(2000, '*') + "b", std::string(4096, 'a')));
  std::string stars;
  for (int i = 0; i < 2000; ++i) stars += "*a";
  EXPECT_FALSE(glob_match(stars + "b", std::string(4096, 'a')));
  EXPECT_TRUE(glob_match(stars, std::string(4096, 'a')));
  EXPECT_FALSE(glob_match(stars, std::string(1999, 'a')));
  EXPECT_FALSE(glob_match(std::string(4096, '?'), std::string(4095, 'a')));
}

// Exhaustive dynamic programming: the reference the two-pointer glob must agree with.
bool reference_glob(const std::string& p, const std::string& t) {
  std::vector<std::vector<bool>> m(p.size() + 1, std::vector<bool>(t.size() + 1, false));
  m[0][0] = true;
  for (size_t i = 1; i <= p.size(); ++i) {
    for (size_t j = 0; j <= t.size(); ++j) {
      if (p[i - 1] == '*') {
        m[i][j] = m[i - 1][j] || (j > 0 && m[i][j - 1]);
      } else {
        m[i][j] = j > 0 && m[i - 1][j - 1] && (p[i - 1] == '?' || p[i - 1] == t[j - 1]);
      }
    }
  }
  return m[p.size()][t.size()];
}

TEST(Glob, AgreesWithTheReferenceOnRandomInputs) {
  std::mt19937 rng(12345);
  auto random_string = [&](const char* alphabet, size_t alphabet_size, size_t max_len) {
    std::string s(rng() % (max_len + 1), ' ');
    for (char& c : s) c = alphabet[rng() % alphabet_size];
    return s;
  };
  for (int i = 0; i < 20'000; ++i) {
    const std::string p = random_string("ab*?", 4, 8);
    const std::string t = random_string("ab", 2, 10);
    ASSERT_EQ(glob_match(p, t), reference_glob(p, t)) << "'" << p << "' vs '" << t << "'";
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Matching a call site.

bool suppressed_by(const std::string& line, const SiteRow& row) { return match_suppression(parse_ok(line), row) == 0; }

TEST(SuppressionMatch, ByFunctionFileModuleAndApi) {
  const SiteRow row = third_party_free();
  EXPECT_TRUE(suppressed_by("free-waits-for-device:foo::release(void*)", row));  // function, demangled
  EXPECT_TRUE(suppressed_by("free-waits-for-device:foo::*", row));               // function glob
  EXPECT_TRUE(suppressed_by("free-waits-for-device:release.cpp", row));          // file base name
  EXPECT_TRUE(suppressed_by("free-waits-for-device:/src/foo/*", row));           // file full path
  EXPECT_TRUE(suppressed_by("free-waits-for-device:libfoo.so", row));            // module base name
  EXPECT_TRUE(suppressed_by("free-waits-for-device:/opt/foo/lib/*", row));       // module full path
  EXPECT_TRUE(suppressed_by("free-waits-for-device:cudaFree", row));             // API
  EXPECT_TRUE(suppressed_by("free-waits-for-device:main", row));                 // an outer frame
  EXPECT_TRUE(suppressed_by("free-waits-for-device:main.cu", row));
  EXPECT_TRUE(suppressed_by("*:libfoo.so", row));                     // any rule
  EXPECT_FALSE(suppressed_by("free-waits-for-device:release", row));  // a glob matches the whole name
  EXPECT_FALSE(suppressed_by("free-waits-for-device:foo", row));      // not a directory name alone
  EXPECT_FALSE(suppressed_by("free-waits-for-device:libbar.so", row));
  EXPECT_FALSE(suppressed_by("free-waits-for-device:cudaFreeHost", row));
  EXPECT_FALSE(suppressed_by("implicit-sync-device-alloc:libfoo.so", row));  // another rule
}

TEST(SuppressionMatch, TheCallSiteFrameCountsEvenWithoutAStack) {
  SiteRow row = make_row(RuleId::CopyHostToHost, "cudaMemcpyAsync", make_frame("step", "/w/train.cu", "/w/app"));
  row.site.frames.clear();
  EXPECT_TRUE(suppressed_by("copy-h2h:train.cu", row));
  EXPECT_TRUE(suppressed_by("copy-h2h:step", row));
}

TEST(SuppressionMatch, UnknownFunctionsAndMissingPathsAreNotMatched) {
  SiteRow row = make_row(RuleId::UndocumentedBlock, "cuMemFree_v2", make_frame("??", "", "/usr/lib/libstripped.so"));
  EXPECT_FALSE(suppressed_by("*:??", row));  // "??" stands for unknown, it is no name
  EXPECT_TRUE(suppressed_by("*:libstripped.so", row));
  SiteRow unknown;
  unknown.rule = RuleId::UndocumentedBlock;
  unknown.api = "cudaFree";
  EXPECT_TRUE(suppressed_by("*:cudaFree", unknown));  // a site without frames still has its API
  EXPECT_TRUE(suppressed_by("*:*", unknown));
  EXPECT_FALSE(suppressed_by("*:main", unknown));
}

TEST(SuppressionMatch, FirstMatchWins) {
  const auto sups = parse_ok("copy-h2h:*\n*:libfoo.so\nfree-waits-for-device:libfoo.so\n");
  EXPECT_EQ(match_suppression(sups, third_party_free()), 1);
  EXPECT_EQ(match_suppression(sups, make_row(RuleId::CopyHostToHost, "cudaMemcpy", make_frame("f", "a.cu", "app"))), 0);
  EXPECT_EQ(match_suppression(sups, make_row(RuleId::CopySyncD2H, "cudaMemcpy", make_frame("f", "a.cu", "app"))), -1);
  EXPECT_EQ(match_suppression({}, third_party_free()), -1);
}

TEST(ApplySuppressions, MovesRowsInOrderAndCountsHits) {
  ReportData data;
  const SiteRow keep1 = make_row(RuleId::CopySyncD2H, "cudaMemcpy", make_frame("main", "main.cu", "app"), 3);
  const SiteRow keep2 =
      make_row(RuleId::DeviceSynchronize, "cudaDeviceSynchronize", make_frame("main", "main.cu", "app"), 1);
  SiteRow other_free = third_party_free(7);
  other_free.site.frame.function = "foo::shutdown()";
  other_free.site.frames[0].function = "foo::shutdown()";
  data.rows = {keep1, third_party_free(5), keep2, other_free};
  data.suppressions = parse_ok("free-waits-for-device:libfoo.so\ncopy-h2h:*\n");

  apply_suppressions(data);

  ASSERT_EQ(data.rows.size(), 2u);
  EXPECT_EQ(data.rows[0].api, "cudaMemcpy");
  EXPECT_EQ(data.rows[1].api, "cudaDeviceSynchronize");
  ASSERT_EQ(data.suppressed.size(), 2u);
  EXPECT_EQ(data.suppressed[0].site.frame.function, "foo::release(void*)");
  EXPECT_EQ(data.suppressed[1].site.frame.function, "foo::shutdown()");
  ASSERT_EQ(data.suppressions.size(), 2u);
  EXPECT_EQ(data.suppressions[0].sites, 2u);
  EXPECT_EQ(data.suppressions[0].calls, 12u);
  EXPECT_EQ(data.suppressions[1].sites, 0u);  // unused: the report shows it as such
  EXPECT_EQ(data.suppressions[1].calls, 0u);
}

TEST(ApplySuppressions, WithoutSuppressionsNothingMoves) {
  ReportData data;
  data.rows = {third_party_free()};
  apply_suppressions(data);
  EXPECT_EQ(data.rows.size(), 1u);
  EXPECT_TRUE(data.suppressed.empty());
}

// ---------------------------------------------------------------------------------------------------------------
// Fingerprints.

SiteRow app_row() {
  return make_row(RuleId::CopyAsyncPageableH2D, "cudaMemcpyAsync",
                  make_frame("main", "/home/me/app/seed000_answer.cu", "/home/me/app/build/seed000_answer", 79));
}

TEST(Fingerprint, RuleApiFunctionAndFileBaseName) {
  EXPECT_EQ(fingerprint(app_row()), "copy-async-pageable-h2d|cudaMemcpyAsync|main|seed000_answer.cu");
}

TEST(Fingerprint, StableWhenTheLineAddressOrCheckoutMoves) {
  SiteRow moved = app_row();
  moved.site.frame.line = 120;
  moved.site.frame.ip = 0x7f0000123456;
  moved.site.frame.file = "/ci/runner/work/app/seed000_answer.cu";
  moved.site.frame.module = "/ci/runner/work/app/build/seed000_answer";
  moved.count = 99;
  moved.total_ns = 12345;
  EXPECT_EQ(fingerprint(moved), fingerprint(app_row()));
}

TEST(Fingerprint, DiffersWhenRuleApiFunctionOrFileDiffer) {
  const std::string base = fingerprint(app_row());
  SiteRow r = app_row();
  r.rule = RuleId::CopyAsyncPageableD2H;
  EXPECT_NE(fingerprint(r), base);
  r = app_row();
  r.api = "cuMemcpyHtoDAsync_v2";
  EXPECT_NE(fingerprint(r), base);
  r = app_row();
  r.site.frame.function = "run(int)";
  EXPECT_NE(fingerprint(r), base);
  r = app_row();
  r.site.frame.file = "/home/me/app/other.cu";
  EXPECT_NE(fingerprint(r), base);
}

TEST(Fingerprint, WithoutSourceFileUsesTheModuleNeverTheOffset) {
  SiteRow r =
      make_row(RuleId::FreeWaitsForDevice, "cudaFree", make_frame("foo::release(void*)", "", "/opt/foo/libfoo.so"));
  EXPECT_EQ(fingerprint(r), "free-waits-for-device|cudaFree|foo::release(void*)|libfoo.so");
  r.site.frame.function = "??";
  EXPECT_EQ(fingerprint(r), "free-waits-for-device|cudaFree|??|libfoo.so");
  r.site.frame.function.clear();
  const std::string before = fingerprint(r);
  r.site.frame.ip += 0x1000;  // a rebuild moves the code
  EXPECT_EQ(fingerprint(r), before);
  EXPECT_EQ(before, "free-waits-for-device|cudaFree|??|libfoo.so");
}

TEST(Fingerprint, UnknownSite) {
  SiteRow r;
  r.rule = RuleId::UndocumentedBlock;
  r.api = "cudaFree";
  EXPECT_EQ(fingerprint(r), "undocumented-block|cudaFree|??|??");
}

TEST(Fingerprint, EscapesSoThatItIsOneLineWithThreeSeparators) {
  EXPECT_EQ(escape_fingerprint_field("a|b\\c\nd\re\tf\x01g\x7fh"), "a\\|b\\\\c\\nd\\re\\tf\\x01g\\x7fh");
  SiteRow r = app_row();
  r.site.frame.function = "operator|(A, B)\nx";
  r.site.frame.file = "/p/we|ird.cu";
  EXPECT_EQ(fingerprint(r), "copy-async-pageable-h2d|cudaMemcpyAsync|operator\\|(A, B)\\nx|we\\|ird.cu");
  // Escaping keeps distinct fields distinct: "a|b" + "c" is not "a" + "b|c".
  SiteRow a = app_row(), b = app_row();
  a.site.frame.function = "f|x";
  a.site.frame.file = "y.cu";
  b.site.frame.function = "f";
  b.site.frame.file = "x|y.cu";
  EXPECT_NE(fingerprint(a), fingerprint(b));
}

TEST(Fingerprint, LongFieldsAreCutWithAHashAndStillLoad) {
  SiteRow a = app_row(), b = app_row();
  a.site.frame.function = "f<" + std::string(5000, 'T') + ">()";
  b.site.frame.function = "f<" + std::string(5000, 'T') + ">(int)";  // same first 512 bytes
  const std::string fa = fingerprint(a), fb = fingerprint(b);
  EXPECT_NE(fa, fb);
  EXPECT_EQ(fa, fingerprint(a));
  EXPECT_EQ(fa.size(), std::string("copy-async-pageable-h2d|cudaMemcpyAsync||seed000_answer.cu").size() + 512 + 17);
  const size_t tilde = fa.size() - std::string("|seed000_answer.cu").size() - 16 - 1;  // "~" + 16 hex digits
  EXPECT_EQ(fa.substr(tilde - 2, 3), "TT~");
  // The worst case (every byte escaped to 4) still fits a baseline line.
  SiteRow worst;
  worst.api = std::string(10'000, '\x01');
  worst.site.frame = make_frame(std::string(10'000, '\x02'), std::string(10'000, '\x03'), "m");
  std::set<std::string> known;
  std::string error;
  ASSERT_TRUE(parse_baseline(baseline_text({worst, a, b}), "b", known, error)) << error;
  EXPECT_EQ(known.size(), 3u);
}

// ---------------------------------------------------------------------------------------------------------------
// Baseline files.

TEST(Baseline, TextIsTheHeaderThenSortedUniqueFingerprints) {
  SiteRow z = app_row();
  z.rule = RuleId::UndocumentedBlock;
  SiteRow preset = app_row();
  preset.fingerprint = "copy-h2h|x|y|z";  // aggregate()'s fingerprint is used when set
  EXPECT_EQ(baseline_text({z, app_row(), app_row(), preset}),
            "asynccheck-baseline 1\n"
            "copy-async-pageable-h2d|cudaMemcpyAsync|main|seed000_answer.cu\n"
            "copy-h2h|x|y|z\n"
            "undocumented-block|cudaMemcpyAsync|main|seed000_answer.cu\n");
  EXPECT_EQ(baseline_text({}), "asynccheck-baseline 1\n");
}

TEST(Baseline, RoundTripMarksKnownRowsOnly) {
  std::vector<SiteRow> old_run = {app_row(), third_party_free()};
  const std::string text = baseline_text(old_run);
  std::set<std::string> known;
  std::string error;
  ASSERT_TRUE(parse_baseline(text, "ci.baseline", known, error)) << error;
  EXPECT_EQ(known.size(), 2u);

  SiteRow moved = app_row();
  moved.site.frame.line = 200;  // an edit above the call moved it
  SiteRow fresh = app_row();
  fresh.rule = RuleId::CopyAsyncPageableD2H;
  std::vector<SiteRow> new_run = {moved, fresh, third_party_free()};
  new_run[1].in_baseline = true;  // stale flags are cleared
  mark_baseline(new_run, known);
  EXPECT_TRUE(new_run[0].in_baseline);
  EXPECT_FALSE(new_run[1].in_baseline);
  EXPECT_TRUE(new_run[2].in_baseline);
}

TEST(Baseline, CommentsBlankLinesDuplicatesAndWhitespace) {
  std::set<std::string> known = {"earlier|a|b|c"};
  std::string error;
  ASSERT_TRUE(
      parse_baseline("asynccheck-baseline 1\r\n# accepted 2024-05-01\n\n  copy-h2h|a|b|c  \r\ncopy-h2h|a|b|c\n"
                     "explicit-sync-device|cudaDeviceSynchronize|main|main.cu",
                     "b", known, error))
      << error;
  EXPECT_EQ(known, (std::set<std::string>{"earlier|a|b|c", "copy-h2h|a|b|c",
                                          "explicit-sync-device|cudaDeviceSynchronize|main|main.cu"}));
  std::set<std::string> empty;
  EXPECT_TRUE(parse_baseline("asynccheck-baseline 1", "b", empty, error));
  EXPECT_TRUE(empty.empty());
}

const std::vector<BadInput>& bad_baselines() {
  static const std::string header = "asynccheck-baseline 1\n";
  static const std::vector<BadInput> cases = {
      {"empty_file", "",
       "b:1: expected the header 'asynccheck-baseline 1', found an empty file (valid: a file written by "
       "--save-baseline)"},
      {"empty_first_line", "\nasynccheck-baseline 1\n",
       "b:1: expected the header 'asynccheck-baseline 1', found an empty line (valid: a file written by "
       "--save-baseline)"},
      {"comment_before_header", "# mine\nasynccheck-baseline 1\n",
       "b:1: expected the header 'asynccheck-baseline 1', found '# mine' (valid: a file written by --save-baseline)"},
      {"other_version", "asynccheck-baseline 2\n",
       "b:1: expected the header 'asynccheck-baseline 1', found 'asynccheck-baseline 2' (valid: a file written by "
       "--save-baseline)"},
      {"no_header", "copy-h2h|a|b|c\n",
       "b:1: expected the header 'asynccheck-baseline 1', found 'copy-h2h|a|b|c' (valid: a file written by "
       "--save-baseline)"},
      {"too_few_fields", header + "copy-h2h|cudaMemcpy|main\n",
       "b:2: fingerprint 'copy-h2h|cudaMemcpy|main' has 3 fields (valid: 4 fields, RULE|API|FUNCTION|FILE, as "
       "--save-baseline writes it)"},
      {"one_field", header + "\n# x\nhello\n",
       "b:4: fingerprint 'hello' has 1 field (valid: 4 fields, RULE|API|FUNCTION|FILE, as --save-baseline writes it)"},
      {"escaped_separator_is_no_field", header + "a|b|c\\|d\n",
       "b:2: fingerprint 'a|b|c\\|d' has 3 fields (valid: 4 fields, RULE|API|FUNCTION|FILE, as --save-baseline writes "
       "it)"},
      {"too_many_fields", header + "a|b|c|d|e\n",
       "b:2: fingerprint 'a|b|c|d|e' has 5 fields (valid: 4 fields, RULE|API|FUNCTION|FILE, as --save-baseline writes "
       "it)"},
      {"invalid_escape", header + "a|b|c\\q|d\n",
       "b:2: invalid escape '\\q' at column 6 (valid: \\\\, \\|, \\n, \\r, \\t, \\xHH)"},
      {"dangling_backslash", header + "a|b|c|d\\\n",
       "b:2: invalid escape '\\' at column 8 (valid: \\\\, \\|, \\n, \\r, \\t, \\xHH)"},
      {"short_hex_escape", header + "a|b|c|\\x1\n",
       "b:2: invalid escape '\\x' at column 7 (valid: \\\\, \\|, \\n, \\r, \\t, \\xHH)"},
      {"nul_byte", header + std::string("a|b|c|d\0\n", 9), "b:2: NUL byte at column 8 (valid: a text file)"},
      {"nul_in_header", std::string("asynccheck\0", 11), "b:1: NUL byte at column 11 (valid: a text file)"},
      {"control_character", header + "a|b|c|\x07\n",
       "b:2: control character 0x07 at column 7 (valid: printable text and tabs)"},
      {"line_too_long", header + "a|b|c|" + std::string(16379, 'd') + "\n",
       "b:2: line is 16385 bytes long (valid: at most 16384)"},
      {"too_many_lines", header + lines_of(99'999, "copy-h2h|b|c|d") + "copy-h2h|b|c|e\n",
       "b:100001: more than 100000 lines (valid: at most 100000)"},
      {"unknown_rule", header + "copy-h2hh|cudaMemcpy|main|a.cu\n",
       "b:2: unknown rule 'copy-h2hh' in fingerprint 'copy-h2hh|cudaMemcpy|main|a.cu' (valid: a rule id; "
       "`asynccheck --list-rules` lists them)"},
  };
  return cases;
}

class BadBaselines : public testing::TestWithParam<BadInput> {};

TEST_P(BadBaselines, FailsWithExactMessageAndLeavesOutputUnchanged) {
  std::set<std::string> out = {"keep|a|b|c"};
  std::string error;
  EXPECT_FALSE(parse_baseline(GetParam().text, "b", out, error));
  EXPECT_EQ(error, GetParam().error);
  EXPECT_EQ(out, std::set<std::string>{"keep|a|b|c"});
}

INSTANTIATE_TEST_SUITE_P(Errors, BadBaselines, testing::ValuesIn(bad_baselines()),
                         [](const testing::TestParamInfo<BadInput>& i) { return std::string(i.param.name); });

TEST(Baseline, BoundsAreInclusive) {
  std::set<std::string> known;
  std::string error;
  const std::string header = "asynccheck-baseline 1\n";
  EXPECT_TRUE(parse_baseline(header + "copy-h2h|b|c|" + std::string(16371, 'd'), "b", known, error)) << error;
  EXPECT_TRUE(parse_baseline(header + lines_of(99'999, "copy-h2h|b|c|d"), "b", known, error)) << error;
}

TEST(Baseline, LoadReadsTheFileAndNamesItInErrors) {
  const std::string path = std::string(ASYNCCHECK_BINARY_DIR) + "/test_suppressions.baseline";
  std::ofstream(path) << baseline_text({app_row()});
  std::set<std::string> known;
  std::string error;
  ASSERT_TRUE(load_baseline(path, known, error)) << error;
  EXPECT_EQ(known, std::set<std::string>{fingerprint(app_row())});

  std::ofstream(path) << "asynccheck-baseline 0\n";
  EXPECT_FALSE(load_baseline(path, known, error));
  EXPECT_EQ(error, path +
                       ":1: expected the header 'asynccheck-baseline 1', found 'asynccheck-baseline 0' (valid: a file "
                       "written by --save-baseline)");
}

TEST(Baseline, LoadFromAMissingFile) {
  std::set<std::string> known;
  std::string error;
  EXPECT_FALSE(load_baseline("/nonexistent/asynccheck.baseline", known, error));
  EXPECT_EQ(error, "cannot read baseline file '/nonexistent/asynccheck.baseline': No such file or directory");
  EXPECT_TRUE(known.empty());
}

}  // namespace
}  // namespace asynccheck::report

namespace asynccheck::report {
namespace {

// Found by fuzzing: a field with a space at its end was saved with the space and loaded without it (the reader
// trims lines), so a saved baseline did not silence the site it was saved for.
TEST(Baseline, FieldsEndingInSpacesSurviveSaveAndLoad) {
  SiteRow row;
  row.rule = rules::RuleId::LegacyStreamSerialization;
  row.api = "x";
  row.site.frame.ip = 1;
  row.site.frame.function = " f ";
  row.site.frame.file = "/src/name ";
  std::vector<SiteRow> rows{row};
  const std::string text = baseline_text(rows);
  EXPECT_NE(text.find("|\\x20f\\x20|name\\x20"), std::string::npos) << text;
  std::set<std::string> loaded;
  std::string error;
  ASSERT_TRUE(parse_baseline(text, "b", loaded, error)) << error;
  mark_baseline(rows, loaded);
  EXPECT_TRUE(rows[0].in_baseline) << text;
}

}  // namespace
}  // namespace asynccheck::report
