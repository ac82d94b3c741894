// The HTML writer (report/html*.cpp) on fabricated rows and on committed recordings: escaping of everything the
// program names, one timeline per site, the waited and own parts drawn in proportion to the evidence, an empty
// report, sites without GPU evidence, and a merge (no per-call times). What a browser makes of the page is checked
// by html.browser (tests/report/html_browser.sh).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "analysis/recording.h"
#include "report/html_parts.h"
#include "report/report.h"

namespace asynccheck::report {
namespace {

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

std::string page(const ReportData& data) {
  std::ostringstream out;
  write_html(out, data);
  return out.str();
}

// Every <svg class="timeline"> of a page, whole.
std::vector<std::string> timelines(const std::string& html) {
  std::vector<std::string> out;
  for (size_t at = html.find("<svg class=\"timeline\""); at != std::string::npos;
       at = html.find("<svg class=\"timeline\"", at + 1)) {
    out.push_back(html.substr(at, html.find("</svg>", at) + 6 - at));
  }
  return out;
}

// The summed widths of the <rect>s of class `cls` (exactly: "own" is not "swatch own") in an SVG.
double widths(const std::string& svg, const std::string& cls) {
  const std::regex rect("<rect class=\"" + cls + "\" x=\"[-0-9.]+\" y=\"[-0-9.]+\" width=\"([0-9.]+)\"");
  double sum = 0;
  for (std::sregex_iterator it(svg.begin(), svg.end(), rect), end; it != end; ++it) sum += std::stod((*it)[1]);
  return sum;
}

uint64_t attribute(const std::string& svg, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(svg, m, std::regex(name + "=\"([0-9]+)\""))) return UINT64_MAX;
  return std::stoull(m[1]);
}

ReportData recorded(const std::string& name, EventLog& log, Analysis& analysis) {
  const std::string rec = std::string(ASYNCCHECK_SOURCE_DIR) + "/tests/fixtures/recordings/" + name + ".rec";
  std::ifstream in(rec);
  std::string error;
  EXPECT_TRUE(in && read_recording(in, log, error)) << rec << ": " << error;
  analysis = analyze(log, analysis_options(log));
  return make_report(log, analysis);
}

// A call of 10 ms from t=1 s that waited from 2 ms to 8 ms for a kernel on stream 7 (an earlier kernel on the
// same stream ran before it): 6 ms waited, 4 ms own, before and after.
SiteTimeline fabricated_timeline() {
  SiteTimeline t;
  t.thread = 2;
  t.start_ns = 1'000'000'000;
  t.end_ns = t.start_ns + 10'000'000;
  t.wait_start_ns = t.start_ns + 2'000'000;
  t.wait_end_ns = t.start_ns + 8'000'000;
  t.work.push_back({TimelineWork::Role::Released, 7, t.start_ns + 1'000'000, t.wait_end_ns, "kernel step"});
  t.work.push_back({TimelineWork::Role::QueuedBehind, 9, t.start_ns - 500'000, t.start_ns + 1'000'000, "memcpy"});
  return t;
}

ReportData one_row(const SiteTimeline& t) {
  ReportData data;
  data.run.program = "/src/app";
  data.run.threshold_ns = 100'000;
  SiteRow row;
  row.rule = rules::RuleId::StreamSynchronize;
  row.level = rules::Level::Note;
  row.api = "cudaStreamSynchronize";
  row.count = 1;
  row.total_ns = row.max_ns = row.median_ns = t.end_ns - t.start_ns;
  row.waited_ns = t.wait_end_ns - t.wait_start_ns;
  row.own_ns = row.total_ns - row.waited_ns;
  row.timeline = t;
  data.rows.push_back(row);
  return data;
}

TEST(Html, EscapesMarkupQuotesAndControlCharacters) {
  EXPECT_EQ(html_escape("a<b>&\"c\"'d'"), "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  EXPECT_EQ(html_escape("\x1b[31mred"), "\\x1b[31mred");  // no terminal escape reaches the page
  EXPECT_EQ(html_escape("bad \xff byte"), "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(html_escape("plain/path.cu:12"), "plain/path.cu:12");
}

// Whatever the program named (its path and arguments, a file, a function, an NVTX range, a kernel), nothing of it
// opens a tag: the page holds the one script element the writer put there, and the names only escaped.
TEST(Html, NothingTheProgramNamesOpensATag) {
  const std::string evil = "</script><script>alert(1)</script><img src=x onerror=alert(2)>\"'";
  SiteTimeline t = fabricated_timeline();
  t.work[0].what = "kernel " + evil;
  ReportData data = one_row(t);
  data.run.program = "/tmp/" + evil;
  data.run.args = {evil};
  data.run.gpu = evil;
  SiteRow& row = data.rows[0];
  row.api = evil;
  row.site.frame.function = evil;
  row.site.frame.file = "/src/" + evil + ".cu";
  row.site.frame.line = 3;
  row.site.frame.ip = 0x1000;
  row.site.frames = {row.site.frame};
  row.nvtx = {{evil, evil, 1}};
  row.shown.evidence = evil;
  row.shown.note = evil;
  const std::string html = page(data);
  EXPECT_EQ(occurrences(html, "<script"), 1u) << html;
  EXPECT_EQ(occurrences(html, "</script>"), 1u);
  EXPECT_EQ(occurrences(html, "<img"), 0u);
  EXPECT_EQ(occurrences(html, "\"'"), 0u) << "a quote of the program's reached the page unescaped";
  EXPECT_GT(occurrences(html, "&lt;/script&gt;&lt;script&gt;alert(1)"), 5u);
  // The script is the last thing on the page and is the writer's constant text.
  const size_t script = html.find("<script>");
  EXPECT_EQ(html.substr(script + 8, kHtmlScript.size()), kHtmlScript);
  // And the page may load nothing: its policy forbids every source but its own inline style and script.
  EXPECT_NE(html.find("content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\""),
            std::string::npos);
}

TEST(Html, WaitedAndOwnPartsLieWhereTheEvidenceSays) {
  const SiteTimeline t = fabricated_timeline();
  const TimelineLayout l = layout_timeline(t);
  ASSERT_GT(l.call.width, 0);
  EXPECT_NEAR(l.waited.width / l.call.width, 0.6, 1e-9);
  EXPECT_NEAR(l.own_before.width / l.call.width, 0.2, 1e-9);
  EXPECT_NEAR(l.own_after.width / l.call.width, 0.2, 1e-9);
  EXPECT_NEAR(l.waited.x, l.call.x + 0.2 * l.call.width, 1e-6);  // the wait began 2 ms in
  // The work it waited for ends where the waited part does.
  EXPECT_NEAR(l.work[0].x + l.work[0].width, l.waited.x + l.waited.width, 1e-6);
  // The window holds the call and the work, here all of it (it began 0.5 ms before the call).
  EXPECT_EQ(l.window_start_ns, t.start_ns - 1'000'000);  // the call's length / 10 of margin
  EXPECT_NEAR(l.work[1].x, l.plot_left + 0.5 / 12 * l.plot_width, 1e-6);

  const std::string svg = timeline_svg(t, "cudaStreamSynchronize", false);
  EXPECT_EQ(occurrences(svg, "<rect class=\"waited\""), 1u);
  EXPECT_EQ(occurrences(svg, "<rect class=\"own\""), 2u);
  EXPECT_NEAR(widths(svg, "waited") / (widths(svg, "waited") + widths(svg, "own")), 0.6, 0.001);
  EXPECT_EQ(occurrences(svg, "<rect class=\"work released\""), 1u);
  EXPECT_EQ(occurrences(svg, "<rect class=\"work behind\""), 1u);
  EXPECT_NE(svg.find(">stream 7</text>"), std::string::npos);
  EXPECT_NE(svg.find(">stream 9</text>"), std::string::npos);
  EXPECT_NE(svg.find(">host thread 2</text>"), std::string::npos);
  EXPECT_NE(svg.find(">waited for GPU work: 6.00 ms</text>"), std::string::npos);  // the legend
  EXPECT_NE(svg.find(">own cost: 4.00 ms</text>"), std::string::npos);
  EXPECT_NE(svg.find(">time from its entry</text>"), std::string::npos);  // the axis
  EXPECT_NE(svg.find(">+4.00 ms</text>"), std::string::npos);
  EXPECT_NE(svg.find(">0</text>"), std::string::npos);
}

// Work that began long before the call (a wait at the end of a long kernel) is clipped at one call's length before
// it, and says when it began, so that the call stays readable.
TEST(Html, WorkFromLongBeforeTheCallIsClipped) {
  SiteTimeline t = fabricated_timeline();
  t.work[1].start_ns = t.start_ns - 900'000'000;
  const TimelineLayout l = layout_timeline(t);
  EXPECT_EQ(l.window_start_ns, t.start_ns - 10'000'000);
  EXPECT_NEAR(l.work[1].x, l.plot_left, 1e-9);
  EXPECT_NE(timeline_svg(t, "c", false).find("began 900.00 ms before the call"), std::string::npos);
}

// The rows of a recording with several sites, streams, waited and own parts: one timeline per site, each split as
// its worst call's evidence says, and the table's sort keys are the row's numbers.
TEST(Html, OneTimelinePerSiteInProportionToItsEvidence) {
  EventLog log;
  Analysis analysis;
  const ReportData data = recorded("seed003_copy_kinds.copies", log, analysis);
  ASSERT_GE(data.rows.size(), 5u);
  const std::string html = page(data);
  const std::vector<std::string> svgs = timelines(html);
  ASSERT_EQ(svgs.size(), data.rows.size());
  EXPECT_EQ(occurrences(html, "<tbody class=\"site\""), data.rows.size());
  size_t split = 0;
  for (size_t i = 0; i < data.rows.size(); ++i) {
    const SiteRow& r = data.rows[i];
    ASSERT_TRUE(r.timeline) << i;
    const Finding* worst = nullptr;
    for (const Finding& f : analysis.findings) {
      if (f.held_ns == r.max_ns && log.calls[f.call].start_ns == r.timeline->start_ns) worst = &f;
    }
    ASSERT_NE(worst, nullptr) << "row " << i << ": the timeline is not of its longest call";
    const std::string& svg = svgs[i];
    EXPECT_EQ(attribute(svg, "data-held-ns"), worst->held_ns) << i;
    EXPECT_EQ(attribute(svg, "data-waited-ns"), worst->waited_ns) << i;
    EXPECT_EQ(attribute(svg, "data-own-ns"), worst->own_ns) << i;
    const double waited = widths(svg, "waited"), own = widths(svg, "own");
    ASSERT_GT(waited + own, 0) << i;
    // Within the rounding of the coordinates (0.05 of a unit each, three rects at most).
    EXPECT_NEAR(waited / (waited + own), static_cast<double>(worst->waited_ns) / static_cast<double>(worst->held_ns),
                0.15 / (waited + own) + 1e-9)
        << i;
    if (worst->waited_ns > 0 && worst->own_ns > 0) ++split;
    EXPECT_NE(html.find("data-total=\"" + std::to_string(r.total_ns) + "\""), std::string::npos) << i;
  }
  EXPECT_GE(split, 3u) << "the recording should have calls with both parts";
}

// A run with nothing to report: no table, no timeline, a line saying so; the script still runs (it marks the page
// ready with no rows).
TEST(Html, EmptyReport) {
  ReportData data;
  data.run.program = "/bin/clean";
  std::string html = page(data);
  EXPECT_EQ(occurrences(html, "<tbody"), 0u);
  EXPECT_EQ(occurrences(html, "<svg"), 0u);
  EXPECT_NE(html.find("No call site where CUDA held the host or serialized the GPU."), std::string::npos);
  EXPECT_NE(html.find("data-sites=\"0\""), std::string::npos);
  EXPECT_EQ(occurrences(html, "<script>"), 1u);
  data.run.monitoring = "off: no CUDA driver";
  html = page(data);
  EXPECT_NE(html.find("Monitoring was off: nothing was watched."), std::string::npos);
  EXPECT_NE(html.find("off: no CUDA driver"), std::string::npos);
}

// A call that waited for nothing (allocation, a module load): the whole call is own cost, no stream is drawn, and
// the caption says its evidence names no GPU work.
TEST(Html, SiteWithoutGpuEvidence) {
  SiteTimeline t = fabricated_timeline();
  t.work.clear();
  t.wait_start_ns = t.wait_end_ns = t.start_ns;
  ReportData data = one_row(t);
  const std::string html = page(data);
  const std::vector<std::string> svgs = timelines(html);
  ASSERT_EQ(svgs.size(), 1u);
  EXPECT_EQ(occurrences(svgs[0], "<rect class=\"waited\""), 0u);
  EXPECT_EQ(occurrences(svgs[0], "<rect class=\"own\""), 1u);
  EXPECT_EQ(occurrences(svgs[0], ">stream "), 0u);
  EXPECT_NE(html.find("Its evidence names no GPU work: the time was its own."), std::string::npos);
}

// A legacy-stream finding held back GPU work, not the host: the call is one plain bar, with no waited/own split.
TEST(Html, GpuSideSiteHasNoHostSplit) {
  SiteTimeline t = fabricated_timeline();
  t.wait_start_ns = t.wait_end_ns = t.start_ns;
  t.work[0].role = t.work[1].role = TimelineWork::Role::HeldBack;
  const std::string svg = timeline_svg(t, "cudaLaunchKernel", true);
  EXPECT_EQ(occurrences(svg, "<rect class=\"call\""), 1u);
  EXPECT_EQ(occurrences(svg, "<rect class=\"waited\""), 0u);
  EXPECT_EQ(occurrences(svg, "<rect class=\"own\""), 0u);
  EXPECT_EQ(occurrences(svg, "<rect class=\"work heldback\""), 2u);
}

// A merged report holds totals, not calls: each site says in one line why it has no timeline.
TEST(Html, MergedReportSaysWhyThereIsNoTimeline) {
  ReportData data = one_row(fabricated_timeline());
  data.rows[0].timeline.reset();
  data.processes.resize(2);
  const std::string html = page(data);
  EXPECT_EQ(occurrences(html, "<svg"), 0u);
  EXPECT_EQ(occurrences(html, "No timeline: a merged report holds each site's totals, not its calls' times."), 1u);
}

// aggregate() places the waited part where the analysis measured it: from the call's start, or, for its own
// transfer that nothing held back, from the transfer's start (the time before it was the call's own).
TEST(Html, AggregatePlacesTheWaitedPartFromTheFinding) {
  EventLog log;
  log.api_names = {"cudaMemcpy"};
  ApiCall call;
  call.start_ns = 1'000'000;
  call.end_ns = 2'000'000;
  call.thread = 3;
  log.calls = {call};
  GpuOp copy;
  copy.kind = GpuOpKind::Memcpy;
  copy.copy_kind = 1;
  copy.bytes = 1 << 20;
  copy.start_ns = 1'300'000;
  copy.end_ns = 1'900'000;
  copy.stream_id = 7;
  log.ops = {copy};
  Analysis analysis;
  Finding f;
  f.rule = f.predicted = rules::RuleId::CopySyncPageableH2D;
  f.level = rules::Level::Warning;
  f.held_ns = 1'000'000;
  f.waited_ns = 600'000;  // the transfer only
  f.own_ns = 400'000;
  f.evidence.by = ReleasedBy::OwnWork;
  f.evidence.op = 0;
  analysis.findings = {f};
  const std::vector<SiteRow> rows = aggregate(log, analysis, {});
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].timeline);
  const SiteTimeline& t = *rows[0].timeline;
  EXPECT_EQ(t.thread, 3u);
  EXPECT_EQ(t.start_ns, 1'000'000u);
  EXPECT_EQ(t.end_ns, 2'000'000u);
  EXPECT_EQ(t.wait_start_ns, 1'300'000u);
  EXPECT_EQ(t.wait_end_ns, 1'900'000u);
  ASSERT_EQ(t.work.size(), 1u);
  EXPECT_EQ(t.work[0].role, TimelineWork::Role::Released);
  EXPECT_EQ(t.work[0].stream, 7u);
  EXPECT_EQ(t.work[0].what, "memcpy HtoD 1.0 MiB");
  // Waited for all of it, from the start: the waited part starts with the call.
  analysis.findings[0].waited_ns = 900'000;
  analysis.findings[0].own_ns = 100'000;
  const SiteTimeline u = *aggregate(log, analysis, {})[0].timeline;
  EXPECT_EQ(u.wait_start_ns, 1'000'000u);
  EXPECT_EQ(u.wait_end_ns, 1'900'000u);
}

}  // namespace
}  // namespace asynccheck::report
