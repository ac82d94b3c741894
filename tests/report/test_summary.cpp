// The summary's words (report/summary.cpp): every count with its noun in the right number (issue 21: "1 error, 0
// warning, 0 note site", "1 more call sites").
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "report/merge.h"
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

// What held up the awaited work (Evidence::behind_op): in its own stream "it first waited for ... in its stream";
// in a stream its stream waits for (the legacy default stream's rule) "it waited mostly for ..., work its stream
// waits for"; for earlier work in its stream, "that work was held up mostly by ...".
TEST(Summary, EvidenceSaysWhatHeldUpTheAwaitedWork) {
  EventLog log;
  auto op = [&](GpuOpKind kind, uint32_t stream, uint64_t start, uint64_t end) {
    GpuOp o;
    o.kind = kind;
    o.stream_id = stream;
    o.start_ns = start;
    o.end_ns = end;
    o.bytes = 8;
    log.ops.push_back(o);
  };
  op(GpuOpKind::Memcpy, 7, 20'000'000, 20'002'000);  // 0: the awaited work, on the legacy stream (7)
  op(GpuOpKind::Kernel, 13, 10'000, 19'990'000);     // 1: a blocking stream's kernel
  op(GpuOpKind::Kernel, 7, 10'000, 19'995'000);      // 2: earlier work of stream 7
  Finding f;
  f.waited_ns = 20'000'000;
  f.evidence.op = 0;
  f.evidence.by = ReleasedBy::OwnWork;
  f.evidence.behind_op = 1;
  std::string text = evidence_text(log, f);
  EXPECT_NE(text.find("; it waited mostly for kernel"), std::string::npos) << text;
  EXPECT_NE(text.find("on stream 13), work its stream waits for (the legacy default stream"), std::string::npos)
      << text;
  f.evidence.behind_op = 2;
  text = evidence_text(log, f);
  EXPECT_NE(text.find("on stream 7) in its stream"), std::string::npos) << text;
  EXPECT_EQ(text.find("work its stream waits for"), std::string::npos) << text;
  f.evidence.by = ReleasedBy::EarlierWorkSameStream;
  f.evidence.behind_op = 1;
  text = evidence_text(log, f);
  EXPECT_NE(text.find("earlier work in its stream, memcpy"), std::string::npos) << text;
  EXPECT_NE(text.find("; that work was held up mostly by kernel"), std::string::npos) << text;
  f.evidence.behind_op = -1;
  EXPECT_EQ(evidence_text(log, f).find("held up"), std::string::npos);
}

// A run that ended by a fault says where (RunInfo::fault): in the summary, and in the JSON only then, read back and
// merged per process.
TEST(Summary, AFaultSaysWhereAndReadsBack) {
  ReportData data;
  data.run.program = "/usr/bin/app";
  data.run.pid = 41;
  data.run.complete = false;
  data.run.end = "signal SIGSEGV";
  std::ostringstream plain_json;
  write_json(plain_json, data);
  EXPECT_EQ(plain_json.str().find("\"fault\""), std::string::npos) << "no key without a fault";
  data.run.fault = "at libcupti.so.13+0x838b0, address 0x0";
  EXPECT_NE(
      summary(data, 0).find("no findings, but the run ended by signal SIGSEGV (a fault at libcupti.so.13+0x838b0, "
                            "address 0x0) before everything was flushed (incomplete)"),
      std::string::npos)
      << summary(data, 0);
  std::ostringstream json;
  write_json(json, data);
  EXPECT_NE(json.str().find("\"end\": \"signal SIGSEGV\", \"fault\": \"at libcupti.so.13+0x838b0, address 0x0\""),
            std::string::npos)
      << json.str();
  ReportFile back;
  std::string error;
  ASSERT_TRUE(parse_report(json.str(), "r.json", back, error)) << error;
  EXPECT_EQ(back.run.fault, data.run.fault);
  ReportFile other = back;
  other.run.pid = 42;
  other.run.fault.clear();
  other.run.end = "exit";
  other.run.complete = true;
  other.path = "r2.json";
  ReportData merged;
  ASSERT_TRUE(merge_reports({back, other}, merged, error)) << error;
  EXPECT_EQ(merged.run.fault, "in process 41 at libcupti.so.13+0x838b0, address 0x0");
  EXPECT_NE(summary(merged, 0).find("(a fault in process 41 at libcupti.so.13+0x838b0, address 0x0)"),
            std::string::npos)
      << summary(merged, 0);
  std::ostringstream merged_json;
  write_json(merged_json, merged);
  EXPECT_NE(merged_json.str().find("\"pid\": 41, \"rank\": null"), std::string::npos) << merged_json.str();
  ReportFile merged_back;
  ASSERT_TRUE(parse_report(merged_json.str(), "m.json", merged_back, error)) << error;
  ASSERT_EQ(merged_back.processes.size(), 2u);
  EXPECT_EQ(merged_back.processes[0].run.fault, data.run.fault);
  EXPECT_EQ(merged_back.processes[1].run.fault, "");
  // Merged again: the processes it was in, from the merged report's own list.
  ReportData twice;
  ASSERT_TRUE(merge_reports({merged_back}, twice, error)) << error;
  EXPECT_EQ(twice.run.fault, "in process 41 at libcupti.so.13+0x838b0, address 0x0");
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
