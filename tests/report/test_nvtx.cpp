// NVTX ranges in the reports (report/aggregate.cpp, summary.cpp, json.cpp, trace.cpp) on fabricated logs: the
// innermost range of each call, counted per site; one range, several, a domain, none; reports of logs without ranges
// keep their exact form (the committed goldens pin that too). The JSON reader reads them back and a merge sums them
// per range (report_reader.cpp, merge.cpp).
#include <gtest/gtest.h>

#include <sstream>

#include "analysis/recording.h"
#include "report/merge.h"
#include "report/report.h"

namespace asynccheck::report {
namespace {

constexpr uint64_t kUs = 1'000;

// Blocking pageable device-to-host copies (each held the host `held`, released by its own copy) at two call sites:
// stack 1 is app.cu:10 in main, stack 2 is app.cu:20 in step.
struct Copies {
  EventLog log;
  uint64_t t = 0;
  uint64_t corr = 1;

  Copies() {
    log.run.threshold_ns = 100 * kUs;
    log.api_names = {"cudaMemcpy"};
    log.stacks = {Stack{{0x1000}, {}}, Stack{{0x2000}, {}}};
    log.symbols = {{0x1000, "main", "/src/app.cu", 10}, {0x2000, "step", "/src/app.cu", 20}};
  }
  void copy(uint32_t stack, uint32_t range, uint64_t held = 300 * kUs) {
    ApiCall c;
    c.correlation_id = corr++;
    c.start_ns = t;
    c.end_ns = t + held;
    c.call.api = rules::ApiKind::Copy;
    c.call.direction = rules::CopyDirection::DeviceToHost;
    c.call.src = rules::MemoryKind::Device;
    c.call.dst = rules::MemoryKind::Pageable;
    c.call.bytes = 1 << 20;
    c.stack = stack;
    c.nvtx_range = range;
    log.calls.push_back(c);
    GpuOp op;
    op.kind = GpuOpKind::Memcpy;
    op.correlation_id = c.correlation_id;
    op.start_ns = t + 2 * kUs;
    op.end_ns = t + held - 2 * kUs;
    op.stream_id = 7;
    op.copy_kind = 2;  // DtoH
    op.bytes = c.call.bytes;
    log.ops.push_back(op);
    t += held + 100 * kUs;
  }
};

struct Reports {
  Analysis analysis;
  ReportData data;
  explicit Reports(const EventLog& log) {
    AnalysisOptions o;
    o.threshold_ns = log.run.threshold_ns;
    analysis = analyze(log, o);
    data = make_report(log, analysis);
    data.source_root = "/src";  // not the working directory, whose name may hold anything
  }
  const SiteRow& row_at(int line) const {
    for (const SiteRow& r : data.rows) {
      if (r.site.frame.line == line) return r;
    }
    throw std::runtime_error("no row at line " + std::to_string(line));
  }
  std::string summary() const {
    std::ostringstream o;
    write_summary(o, data, 0);
    return o.str();
  }
  std::string json() const {
    std::ostringstream o;
    write_json(o, data);
    return o.str();
  }
  std::string sarif() const {
    std::ostringstream o;
    write_sarif(o, data);
    return o.str();
  }
  std::string trace() const {
    std::ostringstream o;
    write_trace(o, data);
    return o.str();
  }
};

// The summary line of the site: "#N level [rule] api at file:line in function, ...".
std::string header_of(const std::string& summary, const std::string& where) {
  const size_t at = summary.find(" at " + where);
  if (at == std::string::npos) return "";
  const size_t begin = summary.rfind('\n', at) + 1;
  return summary.substr(begin, summary.find('\n', at) - begin);
}

TEST(NvtxReport, OneRangeIsNamedOnTheSummaryLine) {
  Copies run;
  run.log.nvtx_ranges = {{"", "step"}, {"", "copy_inputs"}};
  // Nested: "copy_inputs" inside "step"; the capture records the innermost, 2.
  run.copy(1, 2);
  run.copy(1, 2);
  run.copy(2, 0);  // outside any range
  const Reports r(run.log);
  ASSERT_EQ(r.data.rows.size(), 2u);
  EXPECT_EQ(r.row_at(10).nvtx, (std::vector<RangeCount>{{"copy_inputs", "", 2}}));
  EXPECT_TRUE(r.row_at(20).nvtx.empty());
  const std::string summary = r.summary();
  EXPECT_EQ(header_of(summary, "app.cu:10"),
            "#1 warning [copy-sync-d2h] cudaMemcpy at app.cu:10 in main, in NVTX range \"copy_inputs\"")
      << summary;
  EXPECT_EQ(header_of(summary, "app.cu:20"), "#2 warning [copy-sync-d2h] cudaMemcpy at app.cu:20 in step") << summary;
}

TEST(NvtxReport, SeveralRangesAtOneSiteAreCountedMostFirst) {
  Copies run;
  run.log.nvtx_ranges = {{"", "forward"}, {"", "backward"}, {"mylib", "forward"}};
  for (uint32_t range : {1u, 2u, 2u, 3u, 0u, 2u, 1u}) run.copy(1, range);
  const Reports r(run.log);
  ASSERT_EQ(r.data.rows.size(), 1u);
  const SiteRow& row = r.data.rows[0];
  EXPECT_EQ(row.count, 7u);
  // backward 3, then forward 2 (first seen) and mylib's forward 1; the call outside any range is not listed.
  EXPECT_EQ(row.nvtx, (std::vector<RangeCount>{{"backward", "", 3}, {"forward", "", 2}, {"forward", "mylib", 1}}));
  EXPECT_EQ(nvtx_text(row),
            "in NVTX range \"backward\" for 3 of 7 calls, \"forward\" for 2, \"forward\" (domain \"mylib\") for 1");
  const std::string json = r.json();
  EXPECT_NE(json.find("\"nvtx_range\": \"backward\", \"nvtx_ranges\": [{\"name\": \"backward\", \"domain\": \"\", "
                      "\"count\": 3}, {\"name\": \"forward\", \"domain\": \"\", \"count\": 2}, {\"name\": \"forward\", "
                      "\"domain\": \"mylib\", \"count\": 1}]"),
            std::string::npos)
      << json;
  const std::string sarif = r.sarif();
  EXPECT_NE(sarif.find("\"nvtxRange\": \"backward\""), std::string::npos) << sarif;
  EXPECT_NE(sarif.find("\"domain\": \"mylib\""), std::string::npos) << sarif;
  EXPECT_NE(sarif.find(" In NVTX range \\\"backward\\\" for 3 of 7 calls"), std::string::npos) << sarif;
}

TEST(NvtxReport, ManyRangesAreSummarizedOnTheLineAndAllListedInJson) {
  Copies run;
  for (int i = 0; i < 6; ++i) run.log.nvtx_ranges.push_back({"", "r" + std::to_string(i)});
  for (uint32_t range = 1; range <= 6; ++range) run.copy(1, range);
  const Reports r(run.log);
  ASSERT_EQ(r.data.rows.size(), 1u);
  EXPECT_EQ(nvtx_text(r.data.rows[0]),
            "in NVTX range \"r0\" for 1 of 6 calls, \"r1\" for 1, \"r2\" for 1, \"r3\" for 1, and 2 more ranges");
  EXPECT_NE(r.json().find("{\"name\": \"r5\", \"domain\": \"\", \"count\": 1}]"), std::string::npos);
}

TEST(NvtxReport, NamesAreQuotedWhateverTheyHold) {
  Copies run;
  run.log.nvtx_ranges = {{"", "say \"hi\"\n"}};
  run.copy(1, 1);
  const Reports r(run.log);
  EXPECT_EQ(nvtx_text(r.data.rows[0]), "in NVTX range \"say \\\"hi\\\"\\n\"");
  EXPECT_NE(r.json().find("\"nvtx_range\": \"say \\\"hi\\\"\\n\""), std::string::npos);
}

TEST(NvtxReport, TraceCallsCarryTheirRange) {
  Copies run;
  run.log.nvtx_ranges = {{"mylib", "forward"}};
  run.copy(1, 1);
  run.copy(2, 0);
  const std::string trace = Reports(run.log).trace();
  EXPECT_NE(trace.find("\"nvtx_range\": \"forward\", \"nvtx_domain\": \"mylib\""), std::string::npos) << trace;
  size_t n = 0;
  for (size_t at = trace.find("\"nvtx_range\""); at != std::string::npos; at = trace.find("\"nvtx_range\"", at + 1))
    ++n;
  EXPECT_EQ(n, 1u);  // only the call that was in a range
}

// A log without ranges reports exactly as before: no NVTX field anywhere.
TEST(NvtxReport, WithoutRangesNothingChanges) {
  Copies run;
  run.copy(1, 0);
  run.copy(2, 0);
  const Reports r(run.log);
  for (const std::string& text : {r.summary(), r.json(), r.sarif(), r.trace()}) {
    EXPECT_EQ(text.find("NVTX"), std::string::npos) << text;
    EXPECT_EQ(text.find("nvtx"), std::string::npos) << text;
  }
}

// The ranges survive a recording: the replay reports what the live run did.
TEST(NvtxReport, ReplayedRecordingReportsTheSameRanges) {
  Copies run;
  run.log.nvtx_ranges = {{"", "forward"}, {"mylib", "backward"}};
  for (uint32_t range : {1u, 2u, 1u}) run.copy(1, range);
  std::stringstream rec;
  write_recording(rec, run.log);
  EventLog back;
  std::string error;
  ASSERT_TRUE(read_recording(rec, back, error)) << error;
  EXPECT_EQ(Reports(back).json(), Reports(run.log).json());
  EXPECT_EQ(Reports(back).summary(), Reports(run.log).summary());
}

// The JSON report read back (merge.h): the ranges as they were written, names with quotes and domains included.
TEST(NvtxReport, JsonReadsBackWithItsRanges) {
  Copies run;
  run.log.nvtx_ranges = {{"", "say \"hi\""}, {"mylib", "backward"}};
  for (uint32_t range : {1u, 2u, 2u, 0u}) run.copy(1, range);
  run.copy(2, 0);
  const Reports r(run.log);
  ReportFile back;
  std::string error;
  ASSERT_TRUE(parse_report(r.json(), "r.json", back, error)) << error;
  ASSERT_EQ(back.rows.size(), r.data.rows.size());
  for (size_t i = 0; i < back.rows.size(); ++i) EXPECT_EQ(back.rows[i].nvtx, r.data.rows[i].nvtx) << i;
  EXPECT_EQ(r.row_at(10).nvtx, (std::vector<RangeCount>{{"backward", "mylib", 2}, {"say \"hi\"", "", 1}}));
}

// A nested range names the ranges it was in (regions of the whole process among them, as pytest's per-test ones):
// "forward" in one test is not "forward" in another, in every format, read back and merged.
TEST(NvtxReport, NestedRangesNameTheirPath) {
  Copies run;
  // 1 region "test:a", 2 "forward" in it, 3 region "test:b", 4 "forward" in that one.
  run.log.nvtx_ranges = {{"asynccheck", "test:a"}, {"", "forward", 1}, {"asynccheck", "test:b"}, {"", "forward", 3}};
  for (uint32_t range : {2u, 2u, 4u, 1u}) run.copy(1, range);
  const Reports r(run.log);
  ASSERT_EQ(r.data.rows.size(), 1u);
  const SiteRow& row = r.data.rows[0];
  const std::vector<RangeName> in_a{{"asynccheck", "test:a"}}, in_b{{"asynccheck", "test:b"}};
  EXPECT_EQ(row.nvtx,
            (std::vector<RangeCount>{{"forward", "", 2, in_a}, {"forward", "", 1, in_b}, {"test:a", "asynccheck", 1}}));
  EXPECT_EQ(nvtx_text(row),
            "in NVTX range \"test:a\" > \"forward\" for 2 of 4 calls, \"test:b\" > \"forward\" for 1, \"test:a\" "
            "(domain \"asynccheck\") for 1");
  const std::string json = r.json();
  EXPECT_NE(json.find("{\"name\": \"forward\", \"domain\": \"\", \"count\": 2, \"path\": [{\"name\": \"test:a\", "
                      "\"domain\": \"asynccheck\"}, {\"name\": \"forward\", \"domain\": \"\"}]}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\": \"test:a\", \"domain\": \"asynccheck\", \"count\": 1}"), std::string::npos)
      << json;  // an outermost range has no path
  EXPECT_NE(r.sarif().find("\"path\": ["), std::string::npos);
  ReportFile back;
  std::string error;
  ASSERT_TRUE(parse_report(json, "r.json", back, error)) << error;
  EXPECT_EQ(back.rows[0].nvtx, row.nvtx);
  // Merged with itself: each path sums apart.
  std::vector<ReportFile> files{back, back};
  files[1].run.pid = back.run.pid + 1;
  files[1].path = "r2.json";
  ReportData merged;
  ASSERT_TRUE(merge_reports(files, merged, error)) << error;
  EXPECT_EQ(merged.rows[0].nvtx,
            (std::vector<RangeCount>{{"forward", "", 4, in_a}, {"forward", "", 2, in_b}, {"test:a", "asynccheck", 2}}));
  // A path that does not end with the range itself, or names only it, is refused with the reason.
  auto refused = [&](const std::string& from, const std::string& to) {
    std::string text = json;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    ReportFile f;
    std::string why;
    EXPECT_FALSE(parse_report(text, "bad.json", f, why));
    return why;
  };
  EXPECT_NE(refused("{\"name\": \"forward\", \"domain\": \"\"}]}", "{\"name\": \"backward\", \"domain\": \"\"}]}")
                .find("is not the range itself (valid: the last entry is \"forward\" in domain \"\")"),
            std::string::npos);
  EXPECT_NE(refused("\"path\": [{\"name\": \"test:a\", \"domain\": \"asynccheck\"}, ", "\"path\": [")
                .find("1 ranges (valid: 2 to 2048"),
            std::string::npos);
}

// A merge sums each range's count over the processes, per (name, domain), most first; ranges only some processes
// had are kept, and the summary, JSON and SARIF of the merge (which has no log) name them.
TEST(NvtxReport, MergeSumsEachRangeOverTheProcesses) {
  Copies a;
  a.log.run.pid = 11;
  a.log.nvtx_ranges = {{"", "forward"}, {"", "backward"}};
  for (uint32_t range : {1u, 1u, 2u}) a.copy(1, range);
  Copies b;
  b.log.run.pid = 12;
  // Other ids for the same ranges, and one range a does not have: names, not ids, are what merge.
  b.log.nvtx_ranges = {{"lib", "backward"}, {"", "backward"}, {"", "forward"}};
  for (uint32_t range : {2u, 2u, 2u, 3u, 1u, 0u}) b.copy(1, range);
  std::vector<ReportFile> files(2);
  std::string error;
  ASSERT_TRUE(parse_report(Reports(a.log).json(), "a.json", files[0], error)) << error;
  ASSERT_TRUE(parse_report(Reports(b.log).json(), "b.json", files[1], error)) << error;
  ReportData merged;
  ASSERT_TRUE(merge_reports(files, merged, error)) << error;
  ASSERT_EQ(merged.rows.size(), 1u);
  EXPECT_EQ(merged.rows[0].count, 9u);
  EXPECT_EQ(merged.rows[0].nvtx,
            (std::vector<RangeCount>{{"backward", "", 4}, {"forward", "", 3}, {"backward", "lib", 1}}));
  merged.source_root = "/src";
  std::ostringstream summary, json, sarif;
  write_summary(summary, merged, 0);
  write_json(json, merged);
  write_sarif(sarif, merged);
  EXPECT_NE(summary.str().find("in NVTX range \"backward\" for 4 of 9 calls, \"forward\" for 3, \"backward\" (domain "
                               "\"lib\") for 1"),
            std::string::npos)
      << summary.str();
  EXPECT_NE(
      json.str().find("\"nvtx_range\": \"backward\", \"nvtx_ranges\": [{\"name\": \"backward\", \"domain\": \"\", "
                      "\"count\": 4}"),
      std::string::npos)
      << json.str();
  EXPECT_NE(sarif.str().find("\"nvtxRange\": \"backward\""), std::string::npos) << sarif.str();
  // The merge read back and merged with a again: a's ranges count twice.
  files[1] = ReportFile{};
  ASSERT_TRUE(parse_report(json.str(), "m.json", files[1], error)) << error;
  ASSERT_TRUE(merge_reports(files, merged, error)) << error;
  EXPECT_EQ(merged.rows[0].nvtx,
            (std::vector<RangeCount>{{"forward", "", 5}, {"backward", "", 5}, {"backward", "lib", 1}}));
}

// Ranges that a writer would never write are errors naming the place and what would be valid.
TEST(NvtxReport, BadRangesInAReportAreErrors) {
  Copies run;
  run.log.nvtx_ranges = {{"", "forward"}, {"lib", "backward"}};
  for (uint32_t range : {1u, 1u, 2u}) run.copy(1, range);
  const std::string good = Reports(run.log).json();
  const std::string ranges =
      "\"nvtx_ranges\": [{\"name\": \"forward\", \"domain\": \"\", \"count\": 2}, "
      "{\"name\": \"backward\", \"domain\": \"lib\", \"count\": 1}]";
  ASSERT_NE(good.find(ranges), std::string::npos) << good;
  auto error_of = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) return std::string("(not found)");
    text.replace(at, from.size(), to);
    ReportFile out;
    std::string error;
    EXPECT_FALSE(parse_report(text, "r.json", out, error)) << to;
    return error.substr(error.find(": ", 5) + 2);  // past "r.json:LINE:COL"
  };
  EXPECT_EQ(error_of("\"count\": 1}]", "\"count\": 0}]"),
            "sites[0].nvtx_ranges[1].count: 0 (valid: at least 1: a range is listed for its findings)");
  EXPECT_EQ(error_of("\"count\": 1}]", "\"count\": 2}]"),
            "sites[0].nvtx_ranges: the ranges hold 4 calls, the site has 3");
  EXPECT_EQ(error_of("\"nvtx_range\": \"forward\"", "\"nvtx_range\": \"backward\""),
            "sites[0].nvtx_range: \"backward\" is not the first range of nvtx_ranges (valid: \"forward\")");
  EXPECT_EQ(error_of("{\"name\": \"backward\", \"domain\": \"lib\"", "{\"name\": \"forward\", \"domain\": \"\""),
            "sites[0].nvtx_ranges[1]: range \"forward\" in domain \"\" listed twice (valid: each range once)");
  EXPECT_EQ(error_of(", " + ranges, ""),
            "sites[0]: missing member \"nvtx_ranges\" (valid: a report written by asynccheck --json)");
  EXPECT_EQ(error_of("\"domain\": \"lib\", ", ""),
            "sites[0].nvtx_ranges[1]: missing member \"domain\" (valid: a report written by asynccheck --json)");
  EXPECT_EQ(error_of("[{\"name\": \"forward\", \"domain\": \"\", \"count\": 2}, ", "[7, "),
            "sites[0].nvtx_ranges[0]: expected an object, found 7");
}

}  // namespace
}  // namespace asynccheck::report
