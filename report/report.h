// From an analysis to what people read: call sites aggregated per rule, the human summary, JSON.
#pragma once

#include <sys/types.h>

#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "options/options.h"
#include "report/symbolize.h"

namespace asynccheck::report {

inline constexpr int kJsonSchemaVersion = 1;

// What the writers show of a site's example, its first finding: aggregate() describes the finding, a merge reads
// the texts back from a report (merge.h).
struct SiteExample {
  std::string predicted;           // the id of the rule the rules predicted for the call
  std::string predicted_behavior;  // what they predicted the host would do ("returns after staging")
  std::string released_by;         // what released the call ("its own GPU work")
  std::string evidence;            // evidence_text()
  std::string note;
};

// A merged site's share from one of the processes it came from.
struct ProcessShare {
  int pid = 0;
  int64_t rank = -1;  // -1: the process had no rank
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t max_ns = 0;
};

// How many of a site's findings happened with one NVTX range innermost (SiteRow::nvtx).
struct RangeName {
  std::string domain;  // "" = NVTX's default domain
  std::string name;
  bool operator==(const RangeName&) const = default;
};
struct RangeCount {
  std::string name;
  std::string domain;  // "" = NVTX's default domain
  uint64_t count = 0;
  // The ranges it was nested in, outermost first: its thread's own and the process' regions (a test's, in pytest).
  // Part of what tells ranges apart: "forward" in one test is not "forward" in another.
  std::vector<RangeName> enclosing = {};
  bool operator==(const RangeCount&) const = default;
  bool same_range(const RangeCount& o) const {
    return name == o.name && domain == o.domain && enclosing == o.enclosing;
  }
};

// Adds `n` findings in `range` (its name, domain and enclosing ranges; its count is not read) to `ranges`: to its
// entry, or as a new last one.
void add_range(std::vector<RangeCount>& ranges, const RangeCount& range, uint64_t n);
// Most findings first; ties keep their order (first seen).
void sort_ranges(std::vector<RangeCount>& ranges);

// A piece of GPU work on a site's timeline: work the evidence of the site's worst call names (analysis/finding.h).
struct TimelineWork {
  enum class Role : uint8_t {
    Released,      // what the call waited for: the last awaited work, which released it (Evidence::op)
    QueuedBehind,  // work that held up the work it waited for: in its stream or one it waits for (Evidence::behind_op)
    StillRunning,  // work in its scope still running when it returned: it did not wait for it (Evidence::running_op)
    HeldBack,      // a GPU-side finding: work its legacy-stream command waited for or held back
  };
  Role role = Role::Released;
  uint32_t stream = 0;  // CUPTI's stream id
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string what;  // gpu_work_text(): "memcpy HtoD 256.0 MiB"
};

// The worst call of a site (the longest of the calls kept with their evidence), as its timeline draws it. Set by
// aggregate() from the call and its finding, so that the writers draw what the analysis decided and derive nothing;
// a merge has no calls (its reports hold totals) and leaves it unset. Times are on the capture's (CUPTI's) clock.
struct SiteTimeline {
  uint32_t thread = 0;  // ApiCall::thread
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  // The part of the call that waited for GPU work ([wait_start_ns, wait_end_ns), Finding::waited_ns long; empty when
  // it waited for nothing): it ends where the work that released the call ended, or at the return. The rest of the
  // call, before and after it, is its own cost. A GPU-side finding held the host for none of it.
  uint64_t wait_start_ns = 0;
  uint64_t wait_end_ns = 0;
  std::vector<TimelineWork> work;  // by role, as above
};

// One call site and rule, aggregated over every finding there.
struct SiteRow {
  rules::RuleId rule = rules::RuleId::UndocumentedBlock;
  rules::Level level = rules::Level::Warning;
  Verdict verdict = Verdict::DocumentedObserved;
  std::string api;  // "cudaMemcpyAsync"
  CallSite site;
  uint64_t count = 0;
  uint64_t total_ns = 0;   // host time held (GPU-side findings: time other work was held back)
  uint64_t waited_ns = 0;  // of total_ns: waiting for GPU work (GPU-side findings: all of it)
  uint64_t own_ns = 0;     // of total_ns: the calls' own cost (total_ns - waited_ns)
  // Of count: calls that waited less than the threshold. A row of only such calls is reported because their waits
  // add up to the site threshold (Finding::below_threshold).
  uint64_t below = 0;
  uint64_t median_ns = 0;
  uint64_t max_ns = 0;
  uint64_t bytes = 0;
  size_t example = 0;                   // index into Analysis::findings of the first finding here (one run only)
  SiteExample shown;                    // the example as the writers print it
  std::vector<ProcessShare> processes;  // a merge: per process, in the order of the merged reports; else empty
  bool gpu_side = false;                // legacy-stream serialization: measured on the GPU, the host was not held
  std::string fingerprint;              // stable across runs, machines and line moves (baseline.h); set by aggregate()
  bool in_baseline = false;             // listed in the --baseline file: reported, but does not fail the run
  // The innermost NVTX ranges the findings here happened in, with their counts, most findings first (ties: first
  // seen). Findings outside any range are not listed: count less their sum. A site is one row whatever the ranges
  // (its fingerprint, baseline and suppressions do not depend on them). Resolved to names by aggregate(), so
  // that the writers need no log (a merge has none) and a merge sums them per (name, domain).
  std::vector<RangeCount> nvtx;
  std::optional<SiteTimeline> timeline;  // the worst call kept, for the HTML report; unset for a merge
};

// The NVTX range the row's findings happened in, for its one-line summary: `in NVTX range "forward"`, with the
// domain when it is not the default one and the counts when the findings were in several ranges or some in none.
// Empty when none was in a range.
std::string nvtx_text(const SiteRow& row);

// Range `id` of log.nvtx_ranges (an id the table does not hold, which only a hand-made log can have: name "?").
// For the writers that read the events (the trace); the others read SiteRow::nvtx.
const NvtxRange& nvtx_range(const EventLog& log, uint32_t id);
// Range `id` and the ranges it is nested in, outermost first (the last is nvtx_range(log, id)).
std::vector<const NvtxRange*> nvtx_chain(const EventLog& log, uint32_t id);
// Their names, "step > forward": for the trace.
std::string nvtx_path(const EventLog& log, uint32_t id);

// One suppression (suppressions.h) and what it hid in this run.
struct SuppressionUse {
  std::string rule;     // rule id or "*"
  std::string pattern;  // glob over the API name and the call site's functions, files and modules
  std::string origin;   // "file:line" it was read from
  uint64_t sites = 0;   // call sites it suppressed
  uint64_t calls = 0;   // findings (calls) at those sites
};

// The run's counts the report states besides its sites (a merge: summed over the processes).
struct RunTotals {
  uint64_t calls_watched = 0;
  uint64_t gpu_operations = 0;
  uint64_t captured_calls = 0;       // calls captured into CUDA graphs: recorded, not executed, not judged
  uint64_t outside_range_calls = 0;  // made outside the capture range (RunInfo::capture_range): not judged
  uint64_t context_creation_ns = 0;
  uint64_t kind_disagreements = 0;
  std::map<rules::RuleId, uint64_t> not_observed;  // documented-but-not-observed calls, per rule
};

// One process a merged report combines, as its report described it.
struct ProcessInfo {
  std::string file;  // the report it was read from
  RunInfo run;
  uint64_t calls_watched = 0;
  uint64_t gpu_operations = 0;
};

// One run analyzed and aggregated, or several runs merged: everything the writers read. The summary, JSON and
// SARIF writers read only `run`, `totals`, the rows and what follows them; the trace needs the events (`log`,
// `analysis`), which a merge does not have.
struct ReportData {
  const EventLog* log = nullptr;       // null for a merge
  const Analysis* analysis = nullptr;  // null for a merge
  RunInfo run;                         // make_report copies log->run; a merge: what its processes share
  RunTotals totals;
  std::vector<ProcessInfo> processes;        // a merge: every process it combines, in order; empty for one run
  std::vector<SiteRow> rows;                 // reported sites, worst first
  std::vector<SiteRow> suppressed;           // sites a suppression hid (counted in the report, not shown)
  std::vector<SuppressionUse> suppressions;  // every suppression given, with its hit counts (0 = unused)
  std::string baseline;                      // path of the --baseline file, empty if none
  std::string source_root;                   // files under it are reported relative to it (SARIF); default: cwd
  std::string shown_root;  // the source_root option, normalized: JSON and the summary too (source_root.h); or empty
  // The modules that are libraries rather than the user's code when call sites are chosen (option library_frames);
  // the trace chooses them again for the suppressed findings.
  std::vector<std::string> library_patterns = default_library_patterns();
};

// Rows of only below-threshold findings are kept when their waits add up to `site_threshold_ns` (0: never).
std::vector<SiteRow> aggregate(const EventLog& log, const Analysis& analysis, const std::vector<CallSite>& sites,
                               uint64_t site_threshold_ns = 10'000'000);

// The texts the writers show for finding `f` as a site's example.
SiteExample describe_finding(const EventLog& log, const Finding& f);

// The key aggregate() groups findings by: where the call was (file:line or module+offset), its function, the rule
// and the API. A merge combines sites of several reports by the same key.
std::string site_key(const CallSite& site, rules::RuleId rule, std::string_view api);

// One line of evidence for a finding: what released the call, and how close its end was to the return.
std::string evidence_text(const EventLog& log, const Finding& f);
// What a piece of GPU work was, as the evidence names it: "memcpy HtoD 256.0 MiB", "kernel fill".
std::string gpu_work_text(const GpuOp& op);

void write_summary(std::ostream& out, const ReportData& data, uint64_t print_limit);
void write_json(std::ostream& out, const ReportData& data);
// SARIF 2.1.0 for code scanning (sarif.cpp).
void write_sarif(std::ostream& out, const ReportData& data);
// Chrome trace event JSON for Perfetto / chrome://tracing (trace.cpp).
void write_trace(std::ostream& out, const ReportData& data);
// One self-contained HTML page: the run, the sites with their evidence and fix, a timeline per site (html.cpp).
void write_html(std::ostream& out, const ReportData& data);

// How sites are made from findings: which modules are libraries rather than the user's code (option library_frames,
// see call_sites()), and from what total a site of waits each under the threshold is reported (site_threshold).
struct SiteOptions {
  uint64_t site_threshold_ns = 10'000'000;
  std::vector<std::string> library_patterns = default_library_patterns();
};

// Call sites resolved from log.symbols, findings aggregated per site (no suppressions, no baseline yet).
ReportData make_report(const EventLog& log, const Analysis& analysis, const SiteOptions& sites = {});

// What a report reads besides the events: suppressions and the baseline, loaded and checked before the program
// starts, so that a bad file is an error up front rather than a surprise at exit.
class TraceStream;
struct ReportInputs {
  std::vector<SuppressionUse> suppressions;
  std::set<std::string> baseline;
  std::string baseline_path;
  // The trace drawn as the run went (trace_stream.h): written from it, not from the log (which holds only what the
  // report shows). Null: from the log.
  TraceStream* trace_stream = nullptr;
};

// Loads the suppression and baseline files the options name and checks that every output path can be written
// (its directory exists and is writable, it is not a symbolic link, and it does not exist unless overwrite=1).
// `pid` expands %p, `rank` %r. In a job of several processes (rank.world_size > 1) a path without %p or %r is an
// error: every process would write that one file. False with `error` naming the file and what is wrong.
bool prepare_report(const Options& options, int pid, const Rank& rank, ReportInputs& inputs, std::string& error);

// What emit() found, for the caller's exit code.
struct Emitted {
  rules::Level worst_new = rules::Level::None;  // the most severe reported site not in the baseline
  size_t sites = 0;                             // reported sites
  bool write_failed = false;                    // some file could not be written (the error was printed)
  bool monitoring_off = false;                  // nothing was watched (in a merge: in one of its processes)
  bool monitoring_stopped = false;              // watched, then stopped before the end (analysis/monitoring.h)
  bool range_never_entered = false;             // a capture range was given and no call was judged inside it
};

// Whether a capture range was given and no call was judged in it (every call watched was outside it or shed): the
// range never opened, and "no findings" means nothing was checked.
bool range_never_entered(const ReportData& data);

// Writes everything the options ask for from `log` and its analysis (`analysis`; null: analyze() it here): the
// saved events, JSON, SARIF, trace, baseline, and the human summary (to log_file unless summary=0). Errors are
// printed as "asynccheck: ERROR: ..." lines with write(2) and never stop the others; a summary whose file cannot be
// written goes to stderr.
Emitted emit(EventLog& log, const Analysis* analysis, const Options& options, const ReportInputs& inputs);

// What emit() does once the report data exists (also for a merge, merge.h): applies the suppressions and the
// baseline of `inputs`, then writes JSON, SARIF, the trace (only with data.log), the baseline and the summary.
// Paths expand %p and %r with `pid` and `rank`. Suppression uses already in data.suppressions (a merge's, from its
// reports) are kept after those of `inputs`, their counts added to an entry of the same rule, pattern and origin.
Emitted write_report(ReportData& data, const Options& options, const ReportInputs& inputs, int pid, int64_t rank);

// Writes `content` to a temporary name beside `path` and moves it into place, so that no reader sees a
// half-written file; never through a symbolic link. An existing `path` is an error unless `overwrite`. False with
// `error` naming the path and the reason.
bool write_file(const std::string& path, const std::string& content, bool overwrite, std::string& error);
// resolve_symbols within its time limit, saying in one line when it was cut short.
void symbolize_within_limit(EventLog& log);
// write_file in steps, for a file written over time (report/recording_stream.h): a temporary file beside `path`
// (its name in `tmp`; -1 and `error` on failure), everything of `content` written to it, then moved into place.
int open_beside(const std::string& path, std::string& tmp, std::string& error);
bool write_all(int fd, std::string_view content, const std::string& path, std::string& error);
bool move_into_place(const std::string& tmp, const std::string& path, bool overwrite, std::string& error);
// write_file's way (a temporary file beside `path`, moved into place; `overwrite` as for a report) for the bytes of
// the file `from`, read a MiB at a time (a trace can be gigabytes).
bool copy_into_place(const std::string& from, const std::string& path, bool overwrite, std::string& error);
// The file `from` (a temporary one of ours) at `path`, as a report is put there: moved when both are on one
// filesystem (link or rename, no copy), else copied (copy_into_place).
bool place_file(const std::string& from, const std::string& path, bool overwrite, std::string& error);

// The checks of write_file that can be made before anything is written (see prepare_report).
bool check_output_path(const std::string& path, bool overwrite, std::string& error);
// Whether `path` may be read as a `kind` ("recording", "suppression file"): a regular file (a FIFO would block the
// reader forever, a device never end) of at most `max_bytes`. False with `error` = "cannot read KIND 'PATH': ...".
bool check_input_file(const std::string& path, std::string_view kind, uint64_t max_bytes, std::string& error);
// What a file that is not a regular one is, for messages: "a FIFO", "a character device", ...
std::string file_kind(mode_t mode);

// `s` as a JSON string literal, quotes included (control characters escaped; UTF-8 passed through).
std::string json_string(std::string_view s);  // valid UTF-8 whatever `s` holds (invalid bytes: U+FFFD)
void append_json_string(std::string& out, std::string_view s);  // json_string(s) appended to `out`
std::string valid_utf8(std::string_view s);
// Text from a program or a recording (names, paths, messages) made safe for a terminal: control characters (ESC,
// BEL, CR, a C1 CSI; a newline unless `keep_newlines`) become \xHH or \u00HH, so that no name can retitle the
// terminal, move the cursor or print a line of its own.
std::string printable(std::string_view text, bool keep_newlines = false);

std::string format_duration(uint64_t ns);
std::string format_bytes(uint64_t bytes);

}  // namespace asynccheck::report
