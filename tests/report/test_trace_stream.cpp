// The trace written as the run goes (report/trace_stream.h) against the trace of the whole log (report/trace.cpp):
// every committed recording, delivered in rounds and chunks as the capture delivers it, draws the same events (in
// another order, with flows numbered in it), with and without a suppression. The streamed traces are written beside
// the tests for report.trace_stream_format (validate_trace.py).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/feed.h"
#include "analysis/recording.h"
#include "report/report.h"
#include "report/suppressions.h"
#include "report/trace_stream.h"

namespace asynccheck::report {
namespace {

namespace fs = std::filesystem;

struct Recording {
  std::string name;
  EventLog log;
};

std::vector<Recording> committed() {
  std::vector<Recording> out;
  for (const char* dir : {"tests/fixtures/recordings", "tests/fixtures/corpus"}) {
    for (const auto& e : fs::directory_iterator(fs::path(ASYNCCHECK_SOURCE_DIR) / dir)) {
      if (e.path().extension() != ".rec") continue;
      std::ifstream in(e.path());
      Recording r{e.path().stem().string(), {}};
      std::string error;
      EXPECT_TRUE(read_recording(in, r.log, error)) << e.path() << ": " << error;
      if (!r.log.analyzed) out.push_back(std::move(r));  // a log of judgements draws only its examples
    }
  }
  std::sort(out.begin(), out.end(), [](const Recording& a, const Recording& b) { return a.name < b.name; });
  return out;
}

AnalysisOptions options_for(const EventLog& log) {
  AnalysisOptions o;
  if (log.run.threshold_ns) o.threshold_ns = log.run.threshold_ns;
  return o;
}

void suppress(ReportData& data, const std::vector<SuppressionUse>& suppressions) {
  data.suppressions = suppressions;
  apply_suppressions(data);
}

std::string whole_trace(const EventLog& log, const std::vector<SuppressionUse>& suppressions) {
  const Analysis a = analyze(log, options_for(log));
  ReportData data = make_report(log, a);
  suppress(data, suppressions);
  std::ostringstream out;
  write_trace(out, data);
  return out.str();
}

// As the capture delivers a run (test_streaming.cpp: rounds_of): in `rounds` rounds, each with the calls that
// returned and the work that ended before it, analyzed in chunks of `chunk` calls.
// `fork_at`: after that round a child is forked that exits at once (exit(), which flushes every stdio stream).
std::string streamed_trace(const EventLog& log, int rounds, size_t chunk,
                           const std::vector<SuppressionUse>& suppressions, int fork_at = -1) {
  const std::string events =
      (fs::temp_directory_path() / ("asynccheck-trace-events-" + std::to_string(getpid()))).string();
  TraceStream ts;
  std::string error;
  EXPECT_TRUE(ts.open(events, log.api_names, error)) << error;
  StreamingOptions so;
  so.analysis = options_for(log);
  so.margin_ns = 200'000;
  AnalysisFeed feed(so, log.run.env, chunk);
  feed.set_sink(&ts);
  feed.set_release_sink(&ts);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const ApiCall& c : log.calls) lo = std::min(lo, c.start_ns), hi = std::max(hi, c.end_ns);
  for (const GpuOp& o : log.ops) lo = std::min(lo, o.start_ns), hi = std::max(hi, o.end_ns);
  uint64_t prev = 0;
  for (int k = 0; k < rounds; ++k) {
    const uint64_t time = k + 1 == rounds ? hi + 1 : lo + (hi - lo) / static_cast<uint64_t>(rounds) * (k + 1);
    uint64_t horizon = time;
    CallVector calls;
    OpVector ops;
    for (const ApiCall& c : log.calls) {
      if (c.end_ns >= prev && c.end_ns < time) calls.push_back(c);
      if (c.start_ns < time && c.end_ns >= time) horizon = std::min(horizon, c.start_ns);
    }
    for (const GpuOp& o : log.ops) {
      if (o.end_ns >= prev && o.end_ns < time) ops.push_back(o);
    }
    std::reverse(calls.begin(), calls.end());  // any order: the feed sorts
    prev = time;
    feed.add(calls, ops, log.marks, time, horizon);
    const uint64_t h = std::min(horizon, feed.records_before(time, time));
    while (feed.has_backlog()) feed.compact_chunk(h);
    if (k == fork_at) {
      const pid_t child = fork();
      if (child == 0) std::exit(0);
      int status = 0;
      waitpid(child, &status, 0);
    }
  }
  StreamingAnalysis::Result result = feed.finish({}, {}, {});
  // What the capture's end adds from the run itself (core.cpp: emit_report).
  copy_run_and_tables(log, result.log);
  ReportData data = make_report(result.log, result.analysis);
  suppress(data, suppressions);
  std::ostringstream out;
  EXPECT_TRUE(ts.close(out, data, error)) << error;
  return out.str();
}

// One event a line (both writers write so), without the comma between them, sorted; a flow's id replaced by where
// its end lies (the streamed trace numbers the flows in the order the analysis let their work go).
std::vector<std::string> events_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == ',') line.pop_back();
    lines.push_back(line);
  }
  static const std::regex id(R"("id": (\d+), "ts": )");
  std::map<std::string, std::string> end_of_flow;
  for (const std::string& line : lines) {
    std::smatch m;
    if (line.find("\"ph\": \"f\"") != std::string::npos && std::regex_search(line, m, id))
      end_of_flow[m[1]] = line.substr(static_cast<size_t>(m.position(0) + m.length(0)));
  }
  for (std::string& line : lines) {
    std::smatch m;
    if (line.find("cuda_flow") == std::string::npos || !std::regex_search(line, m, id)) continue;
    auto e = end_of_flow.find(m[1]);
    line = m.prefix().str() + "\"id\": \"" + (e == end_of_flow.end() ? "?" : e->second) +
           "\", \"ts\": " + m.suffix().str();
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The events only one side has (a few): what a failure shows.
std::string difference(const std::vector<std::string>& got, const std::vector<std::string>& want) {
  std::vector<std::string> extra, missing;
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::string out;
  for (size_t i = 0; i < extra.size() && i < 4; ++i) out += "\n  only streamed: " + extra[i];
  for (size_t i = 0; i < missing.size() && i < 4; ++i) out += "\n  only whole: " + missing[i];
  return out;
}

TEST(TraceStream, EveryRecordingDrawsTheWholeLogsEvents) {
  const std::vector<Recording> recordings = committed();
  ASSERT_GT(recordings.size(), 20u);
  size_t flows = 0;
  for (const Recording& r : recordings) {
    SCOPED_TRACE(r.name);
    const std::string expected = whole_trace(r.log, {});
    const std::vector<std::string> want = events_of(expected);
    flows +=
        std::count_if(want.begin(), want.end(), [](const std::string& l) { return l.find("cuda_flow") != l.npos; });
    for (const auto& [rounds, chunk] : {std::pair{1, size_t{1000}}, {4, size_t{5}}, {13, size_t{1}}}) {
      const std::string got = streamed_trace(r.log, rounds, chunk, {});
      const std::vector<std::string> events = events_of(got);
      EXPECT_TRUE(events == want) << rounds << " rounds, chunks of " << chunk << difference(events, want);
      if (rounds != 4) continue;
      // For report.trace_stream_format; renamed into place so that a validator never reads half a file.
      const fs::path path = fs::path(ASYNCCHECK_BINARY_DIR) / (r.name + ".stream.trace.json");
      const fs::path tmp = path.string() + ".tmp." + std::to_string(getpid());
      std::ofstream(tmp, std::ios::binary) << got;
      fs::rename(tmp, path);
    }
  }
  EXPECT_GT(flows, 100u);  // arrows were compared, not only slices
}

// A program that forks a child which returns from main (exit(): stdio's buffers flushed) shares the events file
// and its offset with it: nothing of ours may wait in a stdio buffer then, or the child writes it again.
TEST(TraceStream, AForkedChildsExitLeavesTheEventsAlone) {
  for (const Recording& r : committed()) {
    if (r.name != "traps.stream_sync_after_launches") continue;  // the largest: its events spill many times
    const std::vector<std::string> want = events_of(whole_trace(r.log, {}));
    const std::vector<std::string> got = events_of(streamed_trace(r.log, 6, 100, {}, /*fork_at=*/2));
    EXPECT_TRUE(got == want) << difference(got, want);
    return;
  }
  FAIL() << "no recording traps.stream_sync_after_launches";
}

// A suppression is decided at the end (the sites are symbolized then): the streamed trace hides the same findings.
TEST(TraceStream, ASuppressedSiteIsDrawnAsTheWholeLogDrawsIt) {
  size_t hidden = 0;
  for (const Recording& r : committed()) {
    SCOPED_TRACE(r.name);
    const std::vector<SuppressionUse> all = {{"*", "*", "test:1", 0, 0}};
    const std::vector<SuppressionUse> pageable = {{"copy-async-pageable-h2d", "*", "test:1", 0, 0}};
    for (const auto* s : {&all, &pageable}) {
      const std::string expected = whole_trace(r.log, *s);
      hidden += expected.find("cuda_api,suppressed") != std::string::npos;
      const std::vector<std::string> got = events_of(streamed_trace(r.log, 4, 5, *s)), want = events_of(expected);
      EXPECT_TRUE(got == want) << difference(got, want);
    }
  }
  EXPECT_GT(hidden, 10u);
}

}  // namespace
}  // namespace asynccheck::report

namespace asynccheck::report {
namespace {

// The drawn events' file is the stream's own: never one that was there (another copy of the library in the process
// would lose its events), and unlinked as soon as it is made, so that nothing is left behind by a process that never
// writes its trace, and a program exec'd without a fork (the same pid, the same name) makes its own.
TEST(TraceStream, TheEventsFileIsItsOwnAndGoesAway) {
  const fs::path events = fs::temp_directory_path() / ("asynccheck-events-" + std::to_string(getpid()));
  std::string error;
  {
    std::ofstream(events) << "someone else's";
    TraceStream ts;
    EXPECT_FALSE(ts.open(events.string(), {}, error));
    EXPECT_NE(error.find(events.string()), std::string::npos) << error;
    std::ifstream in(events);
    std::string kept;
    std::getline(in, kept);
    EXPECT_EQ(kept, "someone else's");
    fs::remove(events);
  }
  {
    TraceStream ts;
    ASSERT_TRUE(ts.open(events.string(), {}, error)) << error;
    EXPECT_FALSE(fs::exists(events)) << "unlinked once made";
    TraceStream exec_d;  // the same name again while the first is open: an exec without a fork
    EXPECT_TRUE(exec_d.open(events.string(), {}, error)) << error;
  }
  EXPECT_FALSE(fs::exists(events));
  EventLog log;
  const Analysis a;
  const ReportData data = make_report(log, a);
  TraceStream ts;
  ASSERT_TRUE(ts.open(events.string(), {}, error)) << error;
  std::ostringstream out;
  ASSERT_TRUE(ts.close(out, data, error)) << error;
  EXPECT_FALSE(fs::exists(events)) << "written: removed";
  EXPECT_NE(out.str().find("\"otherData\""), std::string::npos);
}

}  // namespace
}  // namespace asynccheck::report
