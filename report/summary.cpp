#include <algorithm>
#include <cstdio>
#include <ostream>

#include "analysis/monitoring.h"
#include "report/plural.h"
#include "report/report.h"
#include "report/source_root.h"

namespace asynccheck::report {
namespace {

// " by signal SIGSEGV (a fault at libfoo.so+0x1a2b, address 0x0)", "" for an ordinary exit (docs/robustness.md).
std::string ended_by(const RunInfo& run) {
  if (run.end == "exit") return "";
  return " by " + printable(run.end) + (run.fault.empty() ? "" : " (a fault " + printable(run.fault) + ")");
}

std::string_view copy_kind_text(uint8_t k) {
  static constexpr std::string_view kNames[] = {"?",    "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < std::size(kNames) ? kNames[k] : "?";
}

}  // namespace

std::string gpu_work_text(const GpuOp& op) {
  std::string s;
  switch (op.kind) {
    case GpuOpKind::Memcpy:
      s = "memcpy " + std::string(copy_kind_text(op.copy_kind)) + " " + format_bytes(op.bytes);
      break;
    case GpuOpKind::Memset: s = "memset " + format_bytes(op.bytes); break;
    case GpuOpKind::Kernel: s = "kernel " + short_function(demangle(op.name.str())); break;
    case GpuOpKind::Sync: s = "synchronization"; break;
    case GpuOpKind::Migration:
      s = std::string("unified-memory migration ") + (op.copy_kind == 2 ? "DtoH " : "HtoD ") + format_bytes(op.bytes);
      break;
  }
  return s;
}

namespace {

std::string op_text(const GpuOp& op) {
  return gpu_work_text(op) + " (" + format_duration(op.end_ns - op.start_ns) + " on stream " +
         std::to_string(op.stream_id) + ")";
}

std::string gap_text(int64_t gap) {
  return gap >= 0 ? format_duration(static_cast<uint64_t>(gap)) + " before the call returned"
                  : format_duration(static_cast<uint64_t>(-gap)) + " after the call returned";
}

}  // namespace

std::string format_duration(uint64_t ns) {
  char buf[64];
  if (ns >= 1'000'000'000)
    std::snprintf(buf, sizeof buf, "%.2f s", static_cast<double>(ns) / 1e9);
  else if (ns >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(ns) / 1e6);
  else if (ns >= 1'000)
    std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%llu ns", static_cast<unsigned long long>(ns));
  return buf;
}

std::string format_bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1ull << 30));
  else if (b >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1ull << 20));
  else if (b >= (1ull << 10))
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / (1ull << 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  return buf;
}

std::string evidence_text(const EventLog& log, const Finding& f) {
  const Evidence& e = f.evidence;
  const GpuOp* op = e.op >= 0 ? &log.ops[static_cast<size_t>(e.op)] : nullptr;
  if (f.rule == rules::RuleId::LegacyStreamSerialization) {
    std::string s = "GPU work in blocking streams was held back " + format_duration(f.gpu_delay_ns);
    if (op) s += "; e.g. " + op_text(*op);
    return s + " (measured from activity timestamps; the host was not held)";
  }
  // What it waited for, then what followed: the split of its host time (analyze.h, Finding::waited_ns).
  auto then_own = [&] {
    return f.own_ns > 0 ? "; the other " + format_duration(f.own_ns) + " was its own cost" : std::string();
  };
  auto running = [&] {
    if (e.running_op < 0) return std::string();
    return "; " + op_text(log.ops[static_cast<size_t>(e.running_op)]) +
           ", in flight when it began, was still running when it returned: it did not wait for " +
           (e.scope == WaitScope::Device ? "the device" : "its stream");
  };
  const std::string waited = "waited " + format_duration(f.waited_ns) + " for ";
  // Evidence::behind_op in another stream: the legacy default stream's rule is why that work came first.
  const char* across_streams =
      ", work its stream waits for (the legacy default stream and the blocking streams, per-thread default ones "
      "too, wait for each other's work)";
  switch (e.by) {
    case ReleasedBy::OwnWork: {
      std::string s = waited + "its own " + op_text(*op) + ", which ended " + gap_text(e.gap_ns);
      if (e.behind_op >= 0) {
        const GpuOp& behind = log.ops[static_cast<size_t>(e.behind_op)];
        s += behind.stream_id == op->stream_id ? "; it first waited for " + op_text(behind) + " in its stream"
                                               : "; it waited mostly for " + op_text(behind) + across_streams;
      }
      return s + then_own();
    }
    case ReleasedBy::EarlierWorkSameStream: {
      std::string s = waited + "earlier work in its stream, " + op_text(*op) + ", which ended " + gap_text(e.gap_ns);
      if (e.behind_op >= 0)
        s += "; that work was held up mostly by " + op_text(log.ops[static_cast<size_t>(e.behind_op)]) + across_streams;
      return s + then_own();
    }
    case ReleasedBy::OtherStreamWork:
      return waited + "work in another stream" +
             (e.scope == WaitScope::Device
                  ? std::string(" (it waits for the whole device)")
                  : std::string(" (one its stream waits for: a blocking stream, on the legacy default "
                                "stream; or work of a stream not known, when its own is not)")) +
             ", " + op_text(*op) + ", which ended " + gap_text(e.gap_ns) + then_own();
    case ReleasedBy::ModuleLoad:
      return "a kernel module was loaded during the call (lazy loading) and no GPU work it could wait for ended while "
             "it held the host: " +
             format_duration(f.own_ns) + " of its own cost" + running();
    case ReleasedBy::ContextCreation: return "the CUDA context was created during the call";
    case ReleasedBy::NothingOnGpu:
      return "no GPU work it could wait for ended while it held the host: " + format_duration(f.own_ns) +
             " of its own cost" + running();
  }
  return "";
}

std::string nvtx_text(const SiteRow& row) {
  if (row.nvtx.empty()) return "";
  // Quoted as JSON strings: a range name is the program's text and may hold quotes or control characters.
  // A nested range with the ranges it is in, outermost first: "step" > "forward".
  auto name = [](const RangeCount& r) {
    std::string s;
    for (const RangeName& up : r.enclosing) s += json_string(up.name) + " > ";
    return s + json_string(r.name) + (r.domain.empty() ? "" : " (domain " + json_string(r.domain) + ")");
  };
  std::string s = "in NVTX range " + name(row.nvtx[0]);
  if (row.nvtx.size() == 1 && row.nvtx[0].count == row.count) return s;
  s += " for " + std::to_string(row.nvtx[0].count) + " of " + counted(row.count, "call");
  constexpr size_t kShown = 4;  // ranges named on the line; the JSON report lists them all
  for (size_t i = 1; i < row.nvtx.size() && i < kShown; ++i)
    s += ", " + name(row.nvtx[i]) + " for " + std::to_string(row.nvtx[i].count);
  if (row.nvtx.size() > kShown) s += ", and " + counted(row.nvtx.size() - kShown, "more range");
  return s;
}

namespace {

// Where the summary says a call site is: its file relative to the source root when one was given and the file lies
// under it ("src/train/loop.cu:79": base names alone clash in a repository), else CallSite::where ("loop.cu:79").
std::string shown_where(const CallSite& site, const std::string& root) {
  const Frame& f = site.frame;
  if (!root.empty() && site.known() && !f.file.empty() && f.line > 0) {
    const std::string shown = shown_file(f.file, root);
    // Made relative here, or already (a merged report written with the root).
    if (shown != f.file || f.file[0] != '/') return shown + ":" + std::to_string(f.line);
  }
  return site.where();
}

// A run with a capture range and no findings says how many calls were left out: a range that stayed closed (no
// cudaProfilerStart) would otherwise look like a clean run.
void range_without_findings(std::ostream& out, const std::string& tag, const ReportData& data) {
  if (data.run.capture_range.empty()) return;
  const uint64_t outside = data.totals.outside_range_calls;
  out << tag << "no findings; " << counted(outside, "call") << " outside the capture range (" << data.run.capture_range
      << ": not judged)"
      << (range_never_entered(data) ? ", every call: nothing was judged (was the range ever entered?)" : "") << "\n";
}

// Who a merged site or report came from: "ranks 0, 1, 3" or "pids 12, 13" (ranks where every process had one).
std::string who(const std::vector<std::pair<int, int64_t>>& procs) {
  const bool ranks = std::all_of(procs.begin(), procs.end(), [](const auto& p) { return p.second >= 0; });
  std::string s = procs.size() == 1 ? (ranks ? "rank " : "pid ") : (ranks ? "ranks " : "pids ");
  for (size_t i = 0; i < procs.size(); ++i) {
    if (i == 8 && procs.size() > 9) return s + ", ... (" + std::to_string(procs.size()) + " in all)";
    s += (i ? ", " : "") + (ranks ? std::to_string(procs[i].second) : std::to_string(procs[i].first));
  }
  return s;
}

// A merge: what its processes did not all share (monitoring off, incomplete, dropped records), one line each.
void merge_notes(std::ostream& out, const std::string& tag, const ReportData& data) {
  std::vector<std::pair<int, int64_t>> off, stopped, incomplete, dropped;
  for (const ProcessInfo& p : data.processes) {
    if (monitoring_off(p.run.monitoring)) off.emplace_back(p.run.pid, p.run.rank);
    if (monitoring_stopped(p.run.monitoring)) stopped.emplace_back(p.run.pid, p.run.rank);
    if (!p.run.complete) incomplete.emplace_back(p.run.pid, p.run.rank);
    if (p.run.dropped_records) dropped.emplace_back(p.run.pid, p.run.rank);
  }
  const std::string of = " of " + counted(data.processes.size(), "process", "processes");
  if (!off.empty())
    out << tag << "monitoring was off in " << off.size() << of << " (" << who(off)
        << "): nothing of theirs is in this report\n";
  if (!stopped.empty())
    out << tag << "monitoring stopped before the end in " << stopped.size() << of << " (" << who(stopped)
        << "): only what they did before it is in this report\n";
  if (!incomplete.empty())
    out << tag << "incomplete in " << incomplete.size() << of << " (" << who(incomplete)
        << "): they ended before everything was flushed\n";
  if (!dropped.empty())
    out << tag << "activity records DROPPED in " << dropped.size() << of << " (" << who(dropped) << ")\n";
}

}  // namespace

void write_summary(std::ostream& out, const ReportData& data, uint64_t print_limit) {
  const RunInfo& run = data.run;
  const std::vector<SiteRow>& rows = data.rows;
  const bool merged = !data.processes.empty();
  // In an MPI job the ranks' summaries share one terminal: each line says whose it is.
  const std::string tag = run.rank >= 0 ? "asynccheck: [rank " + std::to_string(run.rank) + "] " : "asynccheck: ";
  if (merged) {
    std::vector<std::pair<int, int64_t>> all;
    for (const ProcessInfo& p : data.processes) all.emplace_back(p.run.pid, p.run.rank);
    out << tag << "merged report of " << counted(data.processes.size(), "process", "processes") << " (" << who(all)
        << ")\n";
    merge_notes(out, tag, data);
  }
  // Stopped: said first, since every line below covers only the part of the run before it.
  if (!merged && monitoring_stopped(run.monitoring)) {
    out << tag << "monitoring " << printable(run.monitoring)
        << "; what the program did after that was not watched (the findings below are from before)\n";
  }
  if (monitoring_off(run.monitoring)) {
    out << tag << "monitoring was " << printable(run.monitoring) << "; nothing was watched";
    if (run.end != "exit") out << "; the program ended" << ended_by(run);  // docs/robustness.md
    out << "\n";
    return;
  }
  uint64_t suppressed_calls = 0, unused = 0;
  for (const SuppressionUse& s : data.suppressions) {
    suppressed_calls += s.calls;
    unused += s.sites == 0;
  }
  if (rows.empty() && data.suppressions.empty()) {  // nothing to say, unless the run was cut short
    if (!run.complete) {
      out << tag << "no findings, but the run ended" << ended_by(run)
          << " before everything was flushed (incomplete)\n";
    }
    range_without_findings(out, tag, data);
    return;
  }
  uint64_t host_ns = 0, counts[4] = {};
  for (const SiteRow& r : rows) {
    if (!r.gpu_side) host_ns += r.total_ns;
    counts[static_cast<int>(r.level)] += 1;
  }
  uint64_t known = 0;
  for (const SiteRow& r : rows) known += r.in_baseline;
  if (!rows.empty()) {
    out << tag << counted(rows.size(), "call site") << " where CUDA held the host or serialized the GPU (waits from "
        << format_duration(run.threshold_ns) << ", own cost from " << format_duration(run.cost_threshold_ns)
        << ", worst first";
    if (run.rank >= 0) out << "; rank " << run.rank << " from " << run.rank_variable << ", pid " << run.pid;
    out << ")\n";
  }
  size_t shown = 0;
  for (const SiteRow& r : rows) {
    if (print_limit != 0 && shown == print_limit) {
      out << tag << "... " << counted(rows.size() - shown, "more call site") << " (print_limit=" << print_limit
          << ")\n";
      break;
    }
    ++shown;
    const rules::Rule& rule = rules::rule(r.rule);
    out << "\n#" << shown << " " << rules::level_name(r.level) << " [" << rule.id << "] " << printable(r.api);
    // A call made inside a library (cuBLAS, libtorch): "in cublasDgemv_v2, called at app.cu:219".
    if (!r.site.library_entry.empty()) out << " in " << printable(short_function(r.site.library_entry)) << ", called";
    out << " at " << printable(shown_where(r.site, data.shown_root));
    if (r.in_baseline) out << " (in baseline)";
    if (r.site.known() && !r.site.frame.function.empty() && r.site.frame.function != "??") {
      out << " in " << printable(short_function(r.site.frame.function));
    }
    if (!r.nvtx.empty()) out << ", " << printable(nvtx_text(r));
    out << "\n    " << rule.title << "\n";
    out << "    " << counted(r.count, "call") << ", " << (r.gpu_side ? "GPU work held back " : "host held ")
        << format_duration(r.total_ns) << " in total (median " << format_duration(r.median_ns) << ", max "
        << format_duration(r.max_ns) << ")";
    if (!r.gpu_side) {
      out << ": waited " << format_duration(r.waited_ns) << " for GPU work, " << format_duration(r.own_ns)
          << " own cost";
    }
    if (r.bytes) out << ", " << format_bytes(r.bytes);
    out << "\n";
    if (r.below == r.count) {
      out << "    each call waited less than the threshold (" << format_duration(run.threshold_ns)
          << "); reported because their waits add up\n";
    } else if (r.below > 0) {
      out << "    " << r.below << " of them waited less than the threshold (" << format_duration(run.threshold_ns)
          << ")\n";
    }
    if (!r.processes.empty()) {
      std::vector<std::pair<int, int64_t>> from;
      for (const ProcessShare& p : r.processes) from.emplace_back(p.pid, p.rank);
      out << "    from " << counted(r.processes.size(), "process", "processes") << " (" << who(from) << ")"
          << (from.size() > 1 ? "; the median is estimated from theirs" : "") << "\n";
    }
    out << "    evidence: " << printable(r.shown.evidence) << "\n";
    if (r.verdict == Verdict::ObservedUndocumented) {
      out << "    not documented: the rules predict '" << r.shown.predicted << "' (" << r.shown.predicted_behavior
          << ") for this call\n";
    }
    if (!r.shown.note.empty()) out << "    note: " << printable(r.shown.note) << "\n";
    out << "    documented: " << rule.basis << " <" << rule.url << ">\n";
    out << "    fix: " << rule.fix << "\n";
  }
  if (!data.suppressions.empty()) {
    out << "\n"
        << tag << "suppressions (" << counted(data.suppressed.size(), "site") << ", "
        << counted(suppressed_calls, "call") << " suppressed):\n";
    for (const SuppressionUse& s : data.suppressions) {
      out << "    " << counted(s.calls, "call") << " at " << counted(s.sites, "site") << "  " << s.rule << ":"
          << s.pattern << "  (" << s.origin << (s.sites ? ")" : ", unused)") << "\n";
    }
  }
  if (rows.empty()) {
    range_without_findings(out, tag, data);
    return;
  }
  out << "\n"
      << tag << "SUMMARY: " << counted(counts[3], "error") << ", " << counted(counts[2], "warning") << ", "
      << counted(counts[1], "note") << "; host blocked " << format_duration(host_ns) << " in flagged calls";
  if (!data.baseline.empty())
    out << "; " << rows.size() - known << " new, " << known << " in baseline " << data.baseline;
  if (unused) out << "; " << counted(unused, "unused suppression");
  if (const uint64_t captured = data.totals.captured_calls) {
    out << "; " << counted(captured, "call") << " captured into CUDA graphs (recorded, not executed: not judged)";
  }
  if (!run.capture_range.empty()) {
    out << "; " << counted(data.totals.outside_range_calls, "call") << " outside the capture range ("
        << run.capture_range << ": not judged)";
  }
  if (run.dropped_records)
    out << "; " << counted(run.dropped_records, "activity record") << " DROPPED (evidence incomplete)";
  if (run.unanalyzed_calls) {
    out << "; " << counted(run.unanalyzed_calls, "ordinary call")
        << " counted but NOT ANALYZED (the analysis fell behind the "
        << "program: compact_backlog; evidence may be incomplete)";
  }
  if (!run.complete) {
    out << "; the run ended" << ended_by(run) << " before everything was flushed (incomplete)";
  }
  out << "\n";
}

}  // namespace asynccheck::report
