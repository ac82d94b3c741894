// The HTML report: one self-contained page (inline style and script, no network) for the developer who opens a CI
// artifact and wants the answer in one page: the run, the sites with their evidence and fix, and a timeline of each
// site's worst call. Everything the program named goes through html_escape; the script is constant text and reads
// the data from attributes, so no name can end it. The layout is documented in docs/report-format.md.
#include <algorithm>
#include <ostream>

#include "analysis/names.h"
#include "analysis/monitoring.h"
#include "report/html_parts.h"
#include "report/plural.h"
#include "report/source_root.h"
#include "version.h"

namespace asynccheck::report {
namespace {

using E = std::string (*)(std::string_view);
constexpr E esc = html_escape;

// Where a site is, as the summary says it: relative to the source root when one was given and the file is under it.
std::string where(const Frame& f, const CallSite& site, const std::string& root) {
  if (site.known() && !f.file.empty() && f.line > 0) return shown_file(f.file, root) + ":" + std::to_string(f.line);
  return site.where();
}

std::string frame_text(const Frame& f, const std::string& root) {
  std::string s = f.function.empty() ? "??" : short_function(f.function);
  if (!f.file.empty()) s += " at " + shown_file(f.file, root) + (f.line > 0 ? ":" + std::to_string(f.line) : "");
  if (f.is_python()) return s;
  const size_t slash = f.module.rfind('/');
  if (!f.module.empty()) s += " (" + f.module.substr(slash == std::string::npos ? 0 : slash + 1) + ")";
  return s;
}

void item(std::ostream& o, std::string_view name, const std::string& value_html) {
  o << "<dt>" << name << "</dt><dd>" << value_html << "</dd>";
}

void run_section(std::ostream& o, const ReportData& data) {
  const RunInfo& r = data.run;
  const RunTotals& t = data.totals;
  o << "<section id=\"run\"><h2>The run</h2><dl>";
  std::string program = esc(r.program);
  for (const std::string& a : r.args) program += " " + esc(a);
  item(o, "program", "<code>" + program + "</code>");
  if (data.processes.empty()) {
    item(o, "pid",
         std::to_string(r.pid) +
             (r.rank >= 0 ? ", rank " + std::to_string(r.rank) + " (from " + esc(r.rank_variable) + ")" : ""));
  } else {
    item(o, "merged", counted(data.processes.size(), "process", "processes") + " (below)");
  }
  item(o, "GPU", esc(r.gpu.empty() ? "unknown" : r.gpu));
  item(o, "driver",
       esc(r.driver.empty() ? "unknown" : r.driver) +
           (r.cuda_runtime.empty() ? "" : ", CUDA runtime " + esc(r.cuda_runtime)));
  item(o, "monitoring",
       r.monitoring == "on" ? std::string("on") : "<strong class=\"bad\">" + esc(r.monitoring) + "</strong>");
  item(o, "complete",
       r.complete ? std::string("yes")
                  : "<strong class=\"bad\">no: the run ended by " + esc(r.end) +
                        (r.fault.empty() ? "" : " (a fault " + esc(r.fault) + ")") +
                        " before everything was flushed</strong>");
  item(o, "thresholds",
       "waits from " + format_duration(r.threshold_ns) + ", own cost from " + format_duration(r.cost_threshold_ns));
  item(o, "module loading",
       esc(name_of(r.env.module_loading)) + (r.env.launch_blocking ? ", CUDA_LAUNCH_BLOCKING=1" : ""));
  item(o, "calls watched", std::to_string(t.calls_watched));
  item(o, "GPU operations", std::to_string(t.gpu_operations));
  if (t.captured_calls) item(o, "captured into graphs", counted(t.captured_calls, "call") + " (not judged)");
  if (!r.capture_range.empty()) {
    item(o, "capture range",
         esc(r.capture_range) + ": " + counted(t.outside_range_calls, "call") + " outside it (not judged)" +
             (range_never_entered(data) ? "; <strong class=\"bad\">nothing was judged</strong>" : ""));
  }
  if (r.dropped_records)
    item(o, "dropped",
         "<strong class=\"bad\">" + counted(r.dropped_records, "activity record") + " (evidence incomplete)</strong>");
  if (r.unanalyzed_calls)
    item(o, "not analyzed",
         "<strong class=\"bad\">" + counted(r.unanalyzed_calls, "ordinary call") +
             " (the analysis fell behind: compact_backlog)</strong>");
  if (t.context_creation_ns) item(o, "context creation", format_duration(t.context_creation_ns) + " (not findings)");
  if (!t.not_observed.empty()) {
    std::string s;
    for (const auto& [rule, n] : t.not_observed)
      s += (s.empty() ? "" : ", ") + std::string(rules::rule(rule).id) + " " + std::to_string(n);
    item(o, "predicted, not observed", s);
  }
  if (!data.suppressions.empty()) {
    uint64_t calls = 0;
    for (const SuppressionUse& u : data.suppressions) calls += u.calls;
    item(o, "suppressed",
         counted(data.suppressed.size(), "site") + ", " + counted(calls, "call") + " (" +
             counted(data.suppressions.size(), "suppression") + ")");
  }
  if (!data.baseline.empty()) item(o, "baseline", "<code>" + esc(data.baseline) + "</code>");
  o << "</dl>";
  if (!data.processes.empty()) {
    o << "<table class=\"processes\"><thead><tr><th>report</th><th>pid</th><th>rank</th><th>GPU</th>"
         "<th>monitoring</th><th>calls watched</th></tr></thead><tbody>";
    for (const ProcessInfo& p : data.processes) {
      o << "<tr><td><code>" << esc(p.file) << "</code></td><td>" << p.run.pid << "</td><td>"
        << (p.run.rank >= 0 ? std::to_string(p.run.rank) : "") << "</td><td>" << esc(p.run.gpu) << "</td><td>"
        << esc(p.run.monitoring) << "</td><td>" << p.calls_watched << "</td></tr>";
    }
    o << "</tbody></table>";
  }
  o << "</section>";
}

void totals_line(std::ostream& o, const ReportData& data) {
  uint64_t levels[4] = {}, host = 0, waited = 0, own = 0;
  for (const SiteRow& r : data.rows) {
    ++levels[static_cast<int>(r.level)];
    if (r.gpu_side) continue;
    host += r.total_ns;
    waited += r.waited_ns;
    own += r.own_ns;
  }
  o << "<p id=\"totals\"><span class=\"level error\">" << counted(levels[3], "error") << "</span> "
    << "<span class=\"level warning\">" << counted(levels[2], "warning") << "</span> "
    << "<span class=\"level note\">" << counted(levels[1], "note") << "</span> in "
    << counted(data.rows.size(), "call site") << "; the host was held " << format_duration(host)
    << " in flagged calls: waited " << format_duration(waited) << " for GPU work, " << format_duration(own)
    << " own cost.</p>";
}

// The proportion of a row's time that was waited, as a small bar in the table.
std::string split_bar(const SiteRow& r) {
  const double w = r.total_ns ? 100.0 * static_cast<double>(r.waited_ns) / static_cast<double>(r.total_ns) : 0;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "<span class=\"split\" title=\"%.0f%% waited\"><span class=\"w\" style=\"width:%.1f%%\"></span></span>",
                w, w);
  return buf;
}

std::string timeline_part(const SiteRow& r, const ReportData& data) {
  if (!r.timeline) {
    return "<p class=\"no-timeline\">No timeline: " +
           std::string(data.processes.empty() ? "this report holds no times of this site's calls."
                                              : "a merged report holds each site's totals, not its calls' times.") +
           "</p>";
  }
  const SiteTimeline& t = *r.timeline;
  const uint64_t held = t.end_ns - t.start_ns, waited = t.wait_end_ns - t.wait_start_ns;
  std::string s = "<figure class=\"timeline\"><figcaption>The worst call, on host thread " + std::to_string(t.thread) +
                  ": " +
                  (r.gpu_side ? "held back GPU work " + format_duration(r.max_ns) + "; the host was not held"
                              : "held the host " + format_duration(held) + ", waited " + format_duration(waited) +
                                    " for GPU work, " + format_duration(held - waited) + " own cost");
  const uint64_t worst = r.gpu_side ? r.max_ns : held;
  if (!r.gpu_side && worst < r.max_ns) {
    s += " (the longest of the calls kept with their evidence; the site's longest, " + format_duration(r.max_ns) +
         ", was folded into its totals)";
  }
  s += ".";
  if (t.work.empty() && !r.gpu_side) s += " Its evidence names no GPU work: the time was its own.";
  return s + "</figcaption>" + timeline_svg(t, r.api, r.gpu_side) + "</figure>";
}

void site_details(std::ostream& o, const SiteRow& r, const ReportData& data) {
  const rules::Rule& rule = rules::rule(r.rule);
  o << "<div class=\"details\"><p class=\"title\">" << esc(rule.title) << "</p><dl>";
  item(o, "evidence", esc(r.shown.evidence) + " <span class=\"aside\">(the site's example call)</span>");
  item(o, "verdict", std::string(verdict_text(r.verdict)));
  if (r.verdict == Verdict::ObservedUndocumented) {
    item(o, "not documented",
         "the rules predict " + esc(r.shown.predicted) + " (" + esc(r.shown.predicted_behavior) + ") for this call");
  }
  if (r.below == r.count)
    item(o, "below threshold", "each call waited less than the threshold; reported because their waits add up");
  else if (r.below > 0)
    item(o, "below threshold", std::to_string(r.below) + " of the calls waited less than the threshold");
  if (!r.shown.note.empty()) item(o, "note", esc(r.shown.note));
  if (!r.nvtx.empty()) item(o, "NVTX range", esc(nvtx_text(r).substr(std::string_view("in NVTX range ").size())));
  if (!r.site.library_entry.empty()) item(o, "inside library", "<code>" + esc(r.site.library_entry) + "</code>");
  if (r.bytes) item(o, "bytes", format_bytes(r.bytes));
  if (!r.processes.empty()) {
    std::string from;
    for (const ProcessShare& p : r.processes) {
      from += (from.empty() ? "" : ", ") +
              (p.rank >= 0 ? "rank " + std::to_string(p.rank) : "pid " + std::to_string(p.pid)) + ": " +
              counted(p.count, "call") + ", " + format_duration(p.total_ns);
    }
    item(o, "processes", from);
  }
  item(o, "fix", esc(rule.fix));
  item(o, "documented",
       esc(rule.basis) + " <a href=\"" + esc(rule.url) + "\" rel=\"noreferrer\">" + esc(rule.url) + "</a>");
  o << "</dl>";
  if (!r.site.frames.empty()) {
    o << "<details class=\"stack\"><summary>stack (" << counted(r.site.frames.size(), "frame") << ")</summary><ol>";
    for (const Frame& f : r.site.frames) {
      o << "<li" << (f.is_python() ? " class=\"python\"" : "") << ">"
        << (f.is_python() ? "<span class=\"tag\">Python</span> " : "") << "<code>"
        << esc(frame_text(f, data.shown_root)) << "</code></li>";
    }
    o << "</ol></details>";
  }
  o << timeline_part(r, data) << "</div>";
}

void site_rows(std::ostream& o, const ReportData& data) {
  for (size_t i = 0; i < data.rows.size(); ++i) {
    const SiteRow& r = data.rows[i];
    const rules::Rule& rule = rules::rule(r.rule);
    const std::string level(rules::level_name(r.level));
    const std::string at = where(r.site.frame, r.site, data.shown_root);
    o << "<tbody class=\"site\" id=\"site-" << i + 1 << "\" data-index=\"" << i + 1 << "\" data-level=\"" << level
      << "\" data-level-rank=\"" << static_cast<int>(r.level) << "\" data-rule=\"" << esc(rule.id) << "\" data-call=\""
      << esc(r.api + " " + at) << "\" data-count=\"" << r.count << "\" data-total=\"" << r.total_ns
      << "\" data-waited=\"" << r.waited_ns << "\" data-own=\"" << r.own_ns << "\" data-median=\"" << r.median_ns
      << "\" data-max=\"" << r.max_ns << "\">";
    o << "<tr class=\"summary\"><td>" << i + 1 << "</td><td><span class=\"level " << level << "\">" << level
      << "</span>" << (r.in_baseline ? " <span class=\"tag\">baseline</span>" : "") << "</td><td><code>" << esc(rule.id)
      << "</code></td><td><code>" << esc(r.api) << "</code>"
      << (r.site.library_entry.empty() ? "" : " in <code>" + esc(short_function(r.site.library_entry)) + "</code>")
      << " at <code>" << esc(at) << "</code>";
    if (r.site.known() && !r.site.frame.function.empty() && r.site.frame.function != "??")
      o << " in <code>" << esc(short_function(r.site.frame.function)) << "</code>";
    if (r.site.frame.is_python()) o << " <span class=\"tag\">Python</span>";
    o << "</td><td class=\"n\">" << r.count << "</td><td class=\"n\">" << format_duration(r.total_ns)
      << (r.gpu_side ? " <span class=\"aside\">GPU</span>" : "") << "</td><td class=\"n\">"
      << format_duration(r.waited_ns) << split_bar(r) << "</td><td class=\"n\">" << format_duration(r.own_ns)
      << "</td><td class=\"n\">" << format_duration(r.median_ns) << "</td><td class=\"n\">" << format_duration(r.max_ns)
      << "</td></tr>";
    o << "<tr class=\"detail\"><td colspan=\"10\">";
    site_details(o, r, data);
    o << "</td></tr></tbody>";
  }
}

void sites_section(std::ostream& o, const ReportData& data) {
  o << "<section id=\"sites\"><h2>Call sites</h2>";
  totals_line(o, data);
  if (data.rows.empty()) {
    o << "<p class=\"empty\">"
      << (monitoring_off(data.run.monitoring) ? "Monitoring was off: nothing was watched."
          : monitoring_stopped(data.run.monitoring)
              ? "No call site where CUDA held the host or serialized the GPU before monitoring stopped."
              : "No call site where CUDA held the host or serialized the GPU.")
      << "</p></section>";
    return;
  }
  std::vector<std::string> rule_ids;
  for (const SiteRow& r : data.rows) rule_ids.emplace_back(rules::rule(r.rule).id);
  std::sort(rule_ids.begin(), rule_ids.end());
  rule_ids.erase(std::unique(rule_ids.begin(), rule_ids.end()), rule_ids.end());
  o << "<form class=\"controls\" id=\"filters\"><label>level <select id=\"f-level\"><option value=\"\">all</option>"
       "<option>error</option><option>warning</option><option>note</option></select></label> "
       "<label>rule <select id=\"f-rule\"><option value=\"\">all</option>";
  for (const std::string& id : rule_ids) o << "<option>" << esc(id) << "</option>";
  o << "</select></label> <span id=\"shown\">" << counted(data.rows.size(), "site") << "</span></form>";
  o << "<table id=\"site-table\"><thead><tr><th data-sort=\"index\">#</th><th data-sort=\"level-rank\">level</th>"
       "<th data-sort=\"rule\">rule</th><th data-sort=\"call\">call</th><th data-sort=\"count\">count</th>"
       "<th data-sort=\"total\">total</th><th data-sort=\"waited\">waited</th><th data-sort=\"own\">own</th>"
       "<th data-sort=\"median\">median</th><th data-sort=\"max\">max</th></tr></thead>";
  site_rows(o, data);
  o << "</table></section>";
}

}  // namespace

void write_html(std::ostream& o, const ReportData& data) {
  const RunInfo& r = data.run;
  const size_t slash = r.program.rfind('/');
  const std::string name = slash == std::string::npos ? r.program : r.program.substr(slash + 1);
  // The policy forbids every load but the page's own inline style and script: the page works offline, and a
  // report opened from a CI artifact reaches no server.
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
       "<meta name=\"generator\" content=\"asynccheck " ASYNCCHECK_VERSION "\">\n<title>asynccheck: "
    << esc(name.empty() ? "report" : name) << "</title>\n<style>" << kHtmlStyle << "</style></head>\n"
    << "<body data-ready=\"0\" data-sites=\"" << data.rows.size()
    << "\"><header><h1>asynccheck: " << esc(name.empty() ? "report" : name)
    << "</h1><p>Where the host thread waited in CUDA calls: each site with "
    << "its evidence, its fix and a timeline of its worst call.</p></header>\n";
  run_section(o, data);
  o << "\n";
  sites_section(o, data);
  o << "\n<footer>asynccheck " ASYNCCHECK_VERSION " &middot; the formats: docs/report-format.md</footer>\n<script>"
    << kHtmlScript << "</script></body></html>\n";
}

}  // namespace asynccheck::report
