// Combining reports (merge.h): sites per aggregate() key with exact sums, the run's totals summed, provenance kept.
#include "report/merge.h"

#include <cstdint>

#include <unistd.h>

#include <algorithm>
#include <map>

#include "analysis/monitoring.h"

namespace asynccheck::report {
namespace {

// The value all reports agree on, else the distinct values "; "-separated in order of first appearance.
std::string agreed(const std::vector<ReportFile>& reports, std::string RunInfo::*field) {
  std::vector<std::string> seen;
  for (const ReportFile& r : reports) {
    const std::string& v = r.run.*field;
    if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
  }
  std::string out;
  for (const std::string& v : seen) out += (out.empty() ? "" : "; ") + v;
  return out;
}

// The processes a report stands for: a merged report's own list, else the one process it describes.
std::vector<ProcessInfo> processes_of(const ReportFile& r) {
  if (!r.processes.empty()) return r.processes;
  ProcessInfo p;
  p.file = r.path;
  p.run = r.run;
  p.calls_watched = r.totals.calls_watched;
  p.gpu_operations = r.totals.gpu_operations;
  return {p};
}

// A site's shares per process: a merged report's as they were, else the whole site from its one process.
std::vector<ProcessShare> shares_of(const ReportFile& r, const SiteRow& row) {
  if (!row.processes.empty()) return row.processes;
  ProcessShare s;
  s.pid = r.run.pid;
  s.rank = r.run.rank;
  s.count = row.count;
  s.total_ns = row.total_ns;
  s.max_ns = row.max_ns;
  return {s};
}

// The count-weighted median of the medians: the smallest median whose cumulative count passes half of all calls
// (the upper median, as aggregate() takes it). Exact for one process, an estimate for several.
uint64_t weighted_median(std::vector<std::pair<uint64_t, uint64_t>> median_count) {
  std::sort(median_count.begin(), median_count.end());
  uint64_t total = 0;
  for (const auto& mc : median_count) total += mc.second;
  uint64_t seen = 0;
  for (const auto& [median, count] : median_count) {
    seen += count;
    if (seen > total / 2) return median;
  }
  return median_count.empty() ? 0 : median_count.back().first;
}

// Whether two reports of one process are the same report: the same process, counts and sites (a copy, or one file
// named twice), not two runs that happen to share a pid.
bool same_run(const ReportFile& a, const ReportFile& b) {
  if (!a.processes.empty() || !b.processes.empty()) return false;  // merges: their processes are checked when merged
  if (a.run.pid != b.run.pid || a.run.rank != b.run.rank || a.run.program != b.run.program ||
      a.run.args != b.run.args || a.totals.calls_watched != b.totals.calls_watched ||
      a.totals.gpu_operations != b.totals.gpu_operations ||
      a.totals.context_creation_ns != b.totals.context_creation_ns || a.rows.size() != b.rows.size()) {
    return false;
  }
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const SiteRow& x = a.rows[i];
    const SiteRow& y = b.rows[i];
    if (site_key(x.site, x.rule, x.api) != site_key(y.site, y.rule, y.api) || x.count != y.count ||
        x.total_ns != y.total_ns || x.nvtx != y.nvtx) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool merge_reports(const std::vector<ReportFile>& reports, ReportData& out, std::string& error) {
  out = ReportData{};
  if (reports.empty()) {
    error = "no reports to merge";
    return false;
  }
  const ReportFile& first = reports.front();
  for (const ReportFile& r : reports) {
    if (r.run.threshold_ns != first.run.threshold_ns) {
      error = "'" + r.path + "' was made with threshold " + format_duration_option(r.run.threshold_ns) + ", '" +
              first.path + "' with " + format_duration_option(first.run.threshold_ns) +
              ": counts of calls over different thresholds do not add up (valid: reports of runs with one --threshold)";
      return false;
    }
    if (r.run.capture_range != first.run.capture_range) {
      const auto named = [](const std::string& range) { return range.empty() ? std::string("none") : range; };
      error = "'" + r.path + "' was made with capture range " + named(r.run.capture_range) + ", '" + first.path +
              "' with " + named(first.run.capture_range) +
              ": counts over different ranges do not add up (valid: reports of runs with one --capture-range)";
      return false;
    }
    if (r.run.cost_threshold_ns != first.run.cost_threshold_ns) {
      error =
          "'" + r.path + "' was made with cost threshold " + format_duration_option(r.run.cost_threshold_ns) + ", '" +
          first.path + "' with " + format_duration_option(first.run.cost_threshold_ns) +
          ": cost findings over different thresholds do not add up (valid: reports of runs with one --cost-threshold)";
      return false;
    }
  }

  // The same report given twice (a glob that matched it twice, a copy): its calls would be counted twice.
  for (size_t i = 0; i < reports.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const ReportFile& a = reports[j];
      const ReportFile& b = reports[i];
      if (same_run(a, b)) {
        error = "'" + b.path + "' is the report of the same run as '" + a.path + "' (pid " + std::to_string(b.run.pid) +
                ", the same program and counts): given twice, its calls would count twice (valid: each process's "
                "report once)";
        return false;
      }
    }
  }
  // Sums stay within what a report can say (JSON whole numbers up to 2^63 - 1): past it, the merge fails rather
  // than wrap (it printed "0 calls" and wrote a file its own reader refused).
  bool overflow = false;
  auto sum = [&overflow](uint64_t& into, uint64_t v) {
    constexpr uint64_t kMax = static_cast<uint64_t>(INT64_MAX);
    if (v > kMax - std::min(into, kMax)) {
      overflow = true;
      into = kMax;
    } else {
      into += v;
    }
  };

  // The run: what the processes share, and their sums.
  RunInfo& run = out.run;
  run.program = agreed(reports, &RunInfo::program);
  run.gpu = agreed(reports, &RunInfo::gpu);
  run.driver = agreed(reports, &RunInfo::driver);
  run.args = first.run.args;
  run.pid = 0;
  run.threshold_ns = first.run.threshold_ns;
  run.cost_threshold_ns = first.run.cost_threshold_ns;
  run.capture_range = first.run.capture_range;
  run.env.module_loading = first.run.env.module_loading;
  run.monitoring = first.run.monitoring;
  run.complete = true;
  std::vector<std::string> ends;
  for (const ReportFile& r : reports) {
    if (r.run.args != run.args) run.args.clear();
    // On in any process: the processes list each one's state. Else a stopped one says more than an off one.
    if (monitoring_whole(r.run.monitoring) || (monitoring_stopped(r.run.monitoring) && monitoring_off(run.monitoring)))
      run.monitoring = r.run.monitoring;
    run.complete = run.complete && r.run.complete;
    run.env.launch_blocking = run.env.launch_blocking || r.run.env.launch_blocking;
    sum(run.dropped_records, r.run.dropped_records);
    sum(run.unanalyzed_calls, r.run.unanalyzed_calls);
    if (r.run.end != "exit" && std::find(ends.begin(), ends.end(), r.run.end) == ends.end()) ends.push_back(r.run.end);
    RunTotals& t = out.totals;
    sum(t.calls_watched, r.totals.calls_watched);
    sum(t.gpu_operations, r.totals.gpu_operations);
    sum(t.captured_calls, r.totals.captured_calls);
    sum(t.outside_range_calls, r.totals.outside_range_calls);
    sum(t.context_creation_ns, r.totals.context_creation_ns);
    sum(t.kind_disagreements, r.totals.kind_disagreements);
    for (const auto& [rule, count] : r.totals.not_observed) sum(t.not_observed[rule], count);
    for (const ProcessInfo& p : processes_of(r)) {
      out.processes.push_back(p);
      // Each process's fault is in the processes list; the merged run names the processes it was in (from a merged
      // report's own list, not its run's summary of it).
      if (!p.run.fault.empty())
        run.fault += (run.fault.empty() ? "" : "; ") + ("in process " + std::to_string(p.run.pid) + " " + p.run.fault);
    }
  }
  run.end.clear();
  for (const std::string& e : ends) run.end += (run.end.empty() ? "" : "; ") + e;
  if (run.end.empty()) run.end = "exit";

  // The sites, in order of first appearance, then worst first like aggregate().
  std::map<std::string, size_t> index;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> medians;
  for (const ReportFile& r : reports) {
    for (const SiteRow& row : r.rows) {
      auto [it, inserted] = index.try_emplace(site_key(row.site, row.rule, row.api), out.rows.size());
      if (inserted) {
        SiteRow m = row;  // the example, stack, verdict and fingerprint of the first report that has the site
        m.count = m.total_ns = m.waited_ns = m.own_ns = m.below = m.max_ns = m.bytes = 0;
        m.processes.clear();
        m.nvtx.clear();
        m.in_baseline = false;
        out.rows.push_back(std::move(m));
        medians.emplace_back();
      }
      SiteRow& m = out.rows[it->second];
      sum(m.count, row.count);
      sum(m.total_ns, row.total_ns);
      sum(m.waited_ns, row.waited_ns);
      sum(m.own_ns, row.own_ns);
      sum(m.below, row.below);
      m.max_ns = std::max(m.max_ns, row.max_ns);
      sum(m.bytes, row.bytes);
      m.level = std::max(m.level, row.level);
      for (const ProcessShare& s : shares_of(r, row)) m.processes.push_back(s);
      for (const RangeCount& range : row.nvtx) add_range(m.nvtx, range, range.count);
      medians[it->second].emplace_back(row.median_ns, row.count);
    }
    // Suppression uses of every report, to be listed with the merge's own (write_report adds up equal entries).
    for (const SuppressionUse& u : r.suppressions) out.suppressions.push_back(u);
  }
  if (overflow) {
    error =
        "the reports' counts or times add up past 2^63 - 1, more than a report can hold (valid: reports whose sums "
        "fit; merge fewer at a time)";
    return false;
  }
  for (size_t i = 0; i < out.rows.size(); ++i) {
    out.rows[i].median_ns = weighted_median(std::move(medians[i]));
    sort_ranges(out.rows[i].nvtx);  // most findings first over all processes
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const SiteRow& a, const SiteRow& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.level > b.level;
  });
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd)) out.source_root = cwd;
  return true;
}

}  // namespace asynccheck::report
