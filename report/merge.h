// Merging the JSON reports of many processes (the ranks of an MPI job, the workers of a launcher) into one report,
// written by the same writers as any other (`asynccheck merge`, docs/mpi.md).
//
// Reading: a report must be schema "asynccheck-report" version 1 (docs/report-format.md) with every field the
// writer writes, of the right type; fields added later in version 1 (run.rank, a frame's offset and ip, processes, nvtx_ranges)
// may be missing. Errors name the file, the line and column, the field's path, and what would be valid:
//   r.3.json:4:12: run.pid: expected a whole number, found a string
//
// Merging: sites are combined by aggregate()'s key (rule, API, function and file:line, or module+offset without
// line information), which is finer than the baseline fingerprint; each merged site keeps its fingerprint.
// count, total_ns and bytes are summed, max_ns is the maximum, all exact. The median cannot be merged from medians:
// the merged median_ns is the count-weighted median of the per-process medians, exact when one process has the
// site and an estimate otherwise. Each merged site lists its share from every process (`processes`). The example
// shown (evidence, note, stack) is the first report's that has the site; the level is the most severe. NVTX
// ranges (nvtx_ranges, optional) are summed per (name, domain), most findings first.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace asynccheck::report {

// One JSON report as read back: its run, its totals, its sites and suppression uses. A report that is itself a
// merge keeps its processes and each site's shares, so that merges can be merged again.
struct ReportFile {
  std::string path;
  RunInfo run;
  RunTotals totals;
  std::vector<SiteRow> rows;
  std::vector<SuppressionUse> suppressions;
  std::vector<ProcessInfo> processes;  // a merged report's; empty for the report of one process
};

inline constexpr size_t kMaxReportFileBytes = size_t{1} << 30;

// Parses and checks a report's text; `name` prefixes errors. False with `error` as described above.
bool parse_report(std::string_view text, const std::string& name, ReportFile& out, std::string& error);
// Reads `path` and parses it: "cannot read report 'PATH': <reason>" when it cannot be read or is a directory.
bool read_report(const std::string& path, ReportFile& out, std::string& error);

// Combines `reports` (at least one) into `out`, as described above. The merged run: program, args, gpu, driver
// and module loading where all reports agree (differing programs, GPUs and drivers are listed "; "-separated,
// differing args are left empty, module loading is the first report's); pid 0 and no rank; monitoring "on" when
// any process was watched; complete only when every report was; dropped records summed; launch_blocking when any
// process had it. Reports of different thresholds are an error: their counts do not add up.
bool merge_reports(const std::vector<ReportFile>& reports, ReportData& out, std::string& error);

}  // namespace asynccheck::report
