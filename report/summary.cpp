#include <cstdio>
#include <ostream>

#include "report/report.h"

namespace asynccheck::report {
namespace {

std::string_view copy_kind_text(uint8_t k) {
  static constexpr std::string_view kNames[] = {"?", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < std::size(kNames) ? kNames[k] : "?";
}

std::string op_text(const GpuOp& op) {
  std::string s;
  switch (op.kind) {
    case GpuOpKind::Memcpy: s = "memcpy " + std::string(copy_kind_text(op.copy_kind)) + " " + format_bytes(op.bytes); break;
    case GpuOpKind::Memset: s = "memset " + format_bytes(op.bytes); break;
    case GpuOpKind::Kernel: s = "kernel " + short_function(demangle(op.name)); break;
    case GpuOpKind::Sync: s = "synchronization"; break;
  }
  return s + " (" + format_duration(op.end_ns - op.start_ns) + " on stream " + std::to_string(op.stream_id) + ")";
}

std::string gap_text(int64_t gap) {
  return gap >= 0 ? format_duration(static_cast<uint64_t>(gap)) + " before the call returned"
                  : format_duration(static_cast<uint64_t>(-gap)) + " after the call returned";
}

}  // namespace

std::string format_duration(uint64_t ns) {
  char buf[64];
  if (ns >= 1'000'000'000) std::snprintf(buf, sizeof buf, "%.2f s", static_cast<double>(ns) / 1e9);
  else if (ns >= 1'000'000) std::snprintf(buf, sizeof buf, "%.2f ms", static_cast<double>(ns) / 1e6);
  else if (ns >= 1'000) std::snprintf(buf, sizeof buf, "%.1f us", static_cast<double>(ns) / 1e3);
  else std::snprintf(buf, sizeof buf, "%llu ns", static_cast<unsigned long long>(ns));
  return buf;
}

std::string format_bytes(uint64_t b) {
  char buf[64];
  if (b >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1ull << 20));
  else if (b >= (1ull << 10)) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / (1ull << 10));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
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
  switch (e.by) {
    case ReleasedBy::OwnWork: {
      std::string s = "its own " + op_text(*op) + " ended " + gap_text(e.gap_ns);
      if (e.behind_op >= 0) s += "; it first waited for " + op_text(log.ops[static_cast<size_t>(e.behind_op)]) + " in its stream";
      return s;
    }
    case ReleasedBy::EarlierWorkSameStream:
      return "earlier work in its stream, " + op_text(*op) + ", ended " + gap_text(e.gap_ns);
    case ReleasedBy::OtherStreamWork:
      return "work in another stream, " + op_text(*op) + ", ended " + gap_text(e.gap_ns);
    case ReleasedBy::ModuleLoad:
      return "a kernel module was loaded during the call (lazy loading); no GPU work ended near its return";
    case ReleasedBy::ContextCreation:
      return "the CUDA context was created during the call";
    case ReleasedBy::NothingOnGpu:
      return "no GPU work ended near its return: the time is the call's own cost";
  }
  return "";
}

const NvtxRange& nvtx_range(const EventLog& log, uint32_t id) {
  static const NvtxRange kUnknown{"", "?"};
  return id > 0 && id <= log.nvtx_ranges.size() ? log.nvtx_ranges[id - 1] : kUnknown;
}

std::string nvtx_text(const EventLog& log, const SiteRow& row) {
  if (row.nvtx.empty()) return "";
  // Quoted as JSON strings: a range name is the program's text and may hold quotes or control characters.
  auto name = [&](uint32_t id) {
    const NvtxRange& r = nvtx_range(log, id);
    return json_string(r.name) + (r.domain.empty() ? "" : " (domain " + json_string(r.domain) + ")");
  };
  std::string s = "in NVTX range " + name(row.nvtx[0].first);
  if (row.nvtx.size() == 1 && row.nvtx[0].second == row.count) return s;
  s += " for " + std::to_string(row.nvtx[0].second) + " of " + std::to_string(row.count) + " calls";
  constexpr size_t kShown = 4;  // ranges named on the line; the JSON report lists them all
  for (size_t i = 1; i < row.nvtx.size() && i < kShown; ++i) s += ", " + name(row.nvtx[i].first) + " for " + std::to_string(row.nvtx[i].second);
  if (row.nvtx.size() > kShown) s += ", and " + std::to_string(row.nvtx.size() - kShown) + " more ranges";
  return s;
}

void write_summary(std::ostream& out, const ReportData& data, uint64_t print_limit) {
  const EventLog& log = *data.log;
  const Analysis& a = *data.analysis;
  const std::vector<SiteRow>& rows = data.rows;
  const std::string tag = "asynccheck: ";
  if (log.run.monitoring != "on") {
    out << tag << "monitoring was " << log.run.monitoring << "; nothing was watched";
    if (log.run.end != "exit") out << "; the program ended by " << log.run.end;  // docs/robustness.md
    out << "\n";
    return;
  }
  uint64_t suppressed_calls = 0, unused = 0;
  for (const SuppressionUse& s : data.suppressions) {
    suppressed_calls += s.calls;
    unused += s.sites == 0;
  }
  if (rows.empty() && data.suppressions.empty()) {  // nothing to say, unless the run was cut short
    if (!log.run.complete) {
      out << tag << "no findings, but the run ended" << (log.run.end != "exit" ? " by " + log.run.end : "")
          << " before everything was flushed (incomplete)\n";
    }
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
    out << tag << rows.size() << " call site" << (rows.size() == 1 ? "" : "s")
        << " where CUDA held the host or serialized the GPU (threshold " << format_duration(log.run.threshold_ns)
        << ", worst first)\n";
  }
  size_t shown = 0;
  for (const SiteRow& r : rows) {
    if (print_limit != 0 && shown == print_limit) {
      out << tag << "... " << rows.size() - shown << " more call sites (print_limit=" << print_limit << ")\n";
      break;
    }
    ++shown;
    const rules::Rule& rule = rules::rule(r.rule);
    const Finding& ex = a.findings[r.example];
    out << "\n#" << shown << " " << rules::level_name(r.level) << " [" << rule.id << "] " << r.api << " at " << r.site.where();
    if (r.in_baseline) out << " (in baseline)";
    if (r.site.known() && !r.site.frame.function.empty() && r.site.frame.function != "??") {
      out << " in " << short_function(r.site.frame.function);
    }
    if (!r.nvtx.empty()) out << ", " << nvtx_text(log, r);
    out << "\n    " << rule.title << "\n";
    out << "    " << r.count << " call" << (r.count == 1 ? "" : "s") << ", "
        << (r.gpu_side ? "GPU work held back " : "host held ") << format_duration(r.total_ns) << " in total (median "
        << format_duration(r.median_ns) << ", max " << format_duration(r.max_ns) << ")";
    if (r.bytes) out << ", " << format_bytes(r.bytes);
    out << "\n    evidence: " << evidence_text(log, ex) << "\n";
    if (r.verdict == Verdict::ObservedUndocumented) {
      out << "    not documented: the rules predict '" << rules::rule(ex.predicted).id << "' ("
          << rules::host_behavior_text(a.predicted[ex.call].host) << ") for this call\n";
    }
    if (!ex.note.empty()) out << "    note: " << ex.note << "\n";
    out << "    documented: " << rule.basis << " <" << rule.url << ">\n";
    out << "    fix: " << rule.fix << "\n";
  }
  if (!data.suppressions.empty()) {
    out << "\n" << tag << "suppressions (" << data.suppressed.size() << " site" << (data.suppressed.size() == 1 ? "" : "s")
        << ", " << suppressed_calls << " call" << (suppressed_calls == 1 ? "" : "s") << " suppressed):\n";
    for (const SuppressionUse& s : data.suppressions) {
      out << "    " << s.calls << " call" << (s.calls == 1 ? "" : "s") << " at " << s.sites << " site" << (s.sites == 1 ? "" : "s")
          << "  " << s.rule << ":" << s.pattern << "  (" << s.origin << (s.sites ? ")" : ", unused)") << "\n";
    }
  }
  if (rows.empty()) return;
  out << "\n" << tag << "SUMMARY: " << counts[3] << " error, " << counts[2] << " warning, " << counts[1] << " note site"
      << (rows.size() == 1 ? "" : "s") << "; host blocked " << format_duration(host_ns) << " in flagged calls";
  if (!data.baseline.empty()) out << "; " << rows.size() - known << " new, " << known << " in baseline " << data.baseline;
  if (unused) out << "; " << unused << " unused suppression" << (unused == 1 ? "" : "s");
  if (log.run.dropped_records) out << "; " << log.run.dropped_records << " activity records DROPPED (evidence incomplete)";
  if (!log.run.complete) {
    out << "; the run ended" << (log.run.end != "exit" ? " by " + log.run.end : "")
        << " before everything was flushed (incomplete)";
  }
  out << "\n";
}

}  // namespace asynccheck::report
