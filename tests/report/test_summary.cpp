// The summary's words (report/summary.cpp): every count with its noun in the right number (issue 21: "1 error, 0
// warning, 0 note site", "1 more call sites").
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "report/plural.h"
#include "report/report.h"

namespace asynccheck::report {
namespace {

SiteRow row(rules::Level level, uint64_t count) {
  SiteRow r;
  r.level = level;
  r.rule = rules::RuleId::UndocumentedBlock;  // the level is the row's own
  r.api = "cudaMemcpy";
  r.count = count;
  r.total_ns = r.waited_ns = 1'000'000 * count;
  return r;
}

std::string summary(const ReportData& data, uint64_t print_limit) {
  std::ostringstream out;
  write_summary(out, data, print_limit);
  return out.str();
}

std::string summary_line(const std::string& text) {
  const size_t at = text.find("SUMMARY: ");
  return at == std::string::npos ? "" : text.substr(at, text.find(';', at) - at);
}

TEST(Summary, CountedNamesOneAndMany) {
  EXPECT_EQ(counted(0, "call"), "0 calls");
  EXPECT_EQ(counted(1, "call"), "1 call");
  EXPECT_EQ(counted(2, "call"), "2 calls");
  EXPECT_EQ(counted(1, "process", "processes"), "1 process");
  EXPECT_EQ(counted(3, "process", "processes"), "3 processes");
}

TEST(Summary, LevelsAndSitesAreSingularOrPlural) {
  ReportData data;
  data.run.threshold_ns = 100'000;
  data.rows = {row(rules::Level::Error, 1), row(rules::Level::Error, 2), row(rules::Level::Warning, 1),
               row(rules::Level::Note, 3)};
  std::string text = summary(data, 0);
  EXPECT_EQ(summary_line(text), "SUMMARY: 2 errors, 1 warning, 1 note") << text;
  EXPECT_NE(text.find("asynccheck: 4 call sites where"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    1 call, host held"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    2 calls, host held"), std::string::npos) << text;
  text = summary(data, 3);
  EXPECT_NE(text.find("asynccheck: ... 1 more call site (print_limit=3)\n"), std::string::npos) << text;
  text = summary(data, 2);
  EXPECT_NE(text.find("asynccheck: ... 2 more call sites (print_limit=2)\n"), std::string::npos) << text;

  data.rows = {row(rules::Level::Error, 1)};
  text = summary(data, 0);
  EXPECT_EQ(summary_line(text), "SUMMARY: 1 error, 0 warnings, 0 notes") << text;
  EXPECT_NE(text.find("asynccheck: 1 call site where"), std::string::npos) << text;
  data.run.dropped_records = 1;
  data.run.unanalyzed_calls = 1;
  text = summary(data, 0);
  EXPECT_NE(text.find("; 1 activity record DROPPED"), std::string::npos) << text;
  EXPECT_NE(text.find("; 1 ordinary call counted but NOT ANALYZED"), std::string::npos) << text;
}

}  // namespace
}  // namespace asynccheck::report
