#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ostream>

#include "analysis/names.h"
#include "analysis/utf8.h"
#include "report/report.h"
#include "report/source_root.h"

namespace asynccheck::report {

// Names and paths come from the program (kernel names, arguments, /proc/self/cmdline): bytes that are not UTF-8 would
// make the whole file unreadable to a strict JSON parser (our own: merge refused such reports), so every writer's
// strings (JSON, SARIF, trace) go through here: invalid sequences become U+FFFD.
std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = utf8_length(s, i)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string printable(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  char buf[8];
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool c1 = c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[i + 1]) <= 0x9F;  // a C1 control in UTF-8 (0x9B: CSI)
    if ((c < 0x20 && c != '\t' && !(keep_newlines && c == '\n')) || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c1) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(text[++i]));
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  // Most strings (API names, call labels, kernel names) are printable ASCII with nothing to escape: copied whole,
  // rather than checked for UTF-8 into a copy and then escaped a byte at a time.
  auto plain = [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  };
  if (std::all_of(text.begin(), text.end(), plain)) {
    out.append(text);
    out += '"';
    return;
  }
  for (unsigned char c : valid_utf8(text)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

namespace {

std::string quote(std::string_view s) { return json_string(s); }

void frame_json(std::ostream& o, const Frame& f, const std::string& root) {
  o << "{\"function\": " << quote(f.function) << ", \"file\": " << quote(shown_file(f.file, root))
    << ", \"line\": " << f.line << ", \"module\": " << quote(f.module) << ", \"offset\": " << f.offset
    << ", \"ip\": " << f.ip << "}";
}

void rank_json(std::ostream& o, int64_t rank, const std::string& variable) {
  o << "\"rank\": ";
  if (rank >= 0)
    o << rank;
  else
    o << "null";
  o << ", \"rank_variable\": " << quote(variable);
}

// A merge: every process it combines, as its own report described it.
void processes_json(std::ostream& o, const std::vector<ProcessInfo>& processes) {
  o << "  \"processes\": [";
  for (size_t i = 0; i < processes.size(); ++i) {
    const ProcessInfo& p = processes[i];
    const RunInfo& r = p.run;
    o << (i ? ",\n" : "\n") << "    {\"file\": " << quote(p.file) << ", \"program\": " << quote(r.program)
      << ", \"pid\": " << r.pid << ", ";
    rank_json(o, r.rank, r.rank_variable);
    o << ", \"gpu\": " << quote(r.gpu) << ", \"monitoring\": " << quote(r.monitoring)
      << ", \"complete\": " << (r.complete ? "true" : "false") << ", \"end\": " << quote(r.end);
    if (!r.fault.empty()) o << ", \"fault\": " << quote(r.fault);
    o << ", \"dropped_records\": " << r.dropped_records << ", \"unanalyzed_calls\": " << r.unanalyzed_calls
      << ", \"threshold_ns\": " << r.threshold_ns << ", \"calls_watched\": " << p.calls_watched
      << ", \"gpu_operations\": " << p.gpu_operations << "}";
  }
  o << (processes.empty() ? "],\n" : "\n  ],\n");
}

void shares_json(std::ostream& o, const std::vector<ProcessShare>& shares) {
  o << ", \"processes\": [";
  for (size_t k = 0; k < shares.size(); ++k) {
    const ProcessShare& p = shares[k];
    o << (k ? ", " : "") << "{\"pid\": " << p.pid << ", \"rank\": ";
    if (p.rank >= 0)
      o << p.rank;
    else
      o << "null";
    o << ", \"count\": " << p.count << ", \"total_ns\": " << p.total_ns << ", \"max_ns\": " << p.max_ns << "}";
  }
  o << "]";
}

}  // namespace

// Schema (version 1) is documented in docs/report-format.md.
void write_json(std::ostream& o, const ReportData& data) {
  const std::vector<SiteRow>& rows = data.rows;
  const RunInfo& r = data.run;
  const RunTotals& t = data.totals;
  o << "{\n  \"schema\": \"asynccheck-report\",\n  \"version\": " << kJsonSchemaVersion << ",\n";
  o << "  \"run\": {\"program\": " << quote(r.program) << ", \"args\": [";
  for (size_t i = 0; i < r.args.size(); ++i) o << (i ? ", " : "") << quote(r.args[i]);
  o << "], \"pid\": " << r.pid << ", ";
  rank_json(o, r.rank, r.rank_variable);
  o << ", \"gpu\": " << quote(r.gpu) << ", \"driver\": " << quote(r.driver)
    << ", \"monitoring\": " << quote(r.monitoring) << ", \"complete\": " << (r.complete ? "true" : "false")
    << ", \"end\": " << quote(r.end);
  if (!r.fault.empty()) o << ", \"fault\": " << quote(r.fault);  // only after a fault: RunInfo::fault
  o << ", \"dropped_records\": " << r.dropped_records << ", \"unanalyzed_calls\": " << r.unanalyzed_calls
    << ", \"threshold_ns\": " << r.threshold_ns << ", \"cost_threshold_ns\": " << r.cost_threshold_ns
    << ", \"module_loading\": " << quote(name_of(r.env.module_loading))
    << ", \"launch_blocking\": " << (r.env.launch_blocking ? "true" : "false")
    << ", \"calls_watched\": " << t.calls_watched << ", \"captured_calls\": " << t.captured_calls
    << ", \"gpu_operations\": " << t.gpu_operations;
  // Only with a capture range, so that other reports keep their form.
  if (!r.capture_range.empty()) {
    o << ", \"capture_range\": " << quote(r.capture_range) << ", \"outside_range_calls\": " << t.outside_range_calls;
  }
  o << "},\n";
  if (!data.processes.empty()) processes_json(o, data.processes);
  o << "  \"sites\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const SiteRow& s = rows[i];
    const rules::Rule& rule = rules::rule(s.rule);
    o << (i ? ",\n" : "\n") << "    {\"rule\": " << quote(rule.id)
      << ", \"level\": " << quote(rules::level_name(s.level)) << ", \"verdict\": " << quote(verdict_text(s.verdict))
      << ", \"title\": " << quote(rule.title) << ", \"api\": " << quote(s.api) << ", \"location\": ";
    frame_json(o, s.site.frame, data.shown_root);
    // Only for a call made inside a library, so that other reports keep their form.
    if (!s.site.library_entry.empty()) o << ", \"library_entry\": " << quote(s.site.library_entry);
    o << ", \"count\": " << s.count << ", \"measure\": " << quote(s.gpu_side ? "gpu_delay_ns" : "host_ns")
      << ", \"total_ns\": " << s.total_ns << ", \"waited_ns\": " << s.waited_ns << ", \"own_ns\": " << s.own_ns
      << ", \"below_threshold\": " << s.below << ", \"median_ns\": " << s.median_ns << ", \"max_ns\": " << s.max_ns
      << ", \"bytes\": " << s.bytes << ", \"predicted\": " << quote(s.shown.predicted)
      << ", \"predicted_behavior\": " << quote(s.shown.predicted_behavior)
      << ", \"released_by\": " << quote(s.shown.released_by) << ", \"evidence\": " << quote(s.shown.evidence)
      << ", \"note\": " << quote(s.shown.note) << ", \"fix\": " << quote(rule.fix)
      << ", \"fingerprint\": " << quote(s.fingerprint) << ", \"in_baseline\": " << (s.in_baseline ? "true" : "false")
      << ", \"doc\": " << quote(rule.url);
    // Only where findings happened in NVTX ranges, so that reports of programs without them are unchanged.
    if (!s.nvtx.empty()) {
      o << ", \"nvtx_range\": " << quote(s.nvtx[0].name) << ", \"nvtx_ranges\": [";
      for (size_t k = 0; k < s.nvtx.size(); ++k) {
        const RangeCount& range = s.nvtx[k];
        o << (k ? ", " : "") << "{\"name\": " << quote(range.name) << ", \"domain\": " << quote(range.domain)
          << ", \"count\": " << range.count;
        // Only for a nested range: the ranges it was in, outermost first, and itself.
        if (!range.enclosing.empty()) {
          o << ", \"path\": [";
          for (const RangeName& up : range.enclosing)
            o << "{\"name\": " << quote(up.name) << ", \"domain\": " << quote(up.domain) << "}, ";
          o << "{\"name\": " << quote(range.name) << ", \"domain\": " << quote(range.domain) << "}]";
        }
        o << "}";
      }
      o << "]";
    }
    o << ", \"stack\": [";
    for (size_t k = 0; k < s.site.frames.size(); ++k) {
      if (k) o << ", ";
      frame_json(o, s.site.frames[k], data.shown_root);
    }
    o << "]";
    if (!data.processes.empty()) shares_json(o, s.processes);
    o << "}";
  }
  o << (rows.empty() ? "],\n" : "\n  ],\n");
  o << "  \"not_observed\": {";
  bool first = true;
  for (const auto& [rule, count] : t.not_observed) {
    o << (first ? "" : ", ") << quote(rules::rule(rule).id) << ": " << count;
    first = false;
  }
  o << "},\n  \"suppressions\": [";
  for (size_t i = 0; i < data.suppressions.size(); ++i) {
    const SuppressionUse& u = data.suppressions[i];
    o << (i ? ", " : "") << "{\"rule\": " << quote(u.rule) << ", \"pattern\": " << quote(u.pattern)
      << ", \"origin\": " << quote(u.origin) << ", \"sites\": " << u.sites << ", \"calls\": " << u.calls << "}";
  }
  o << "],\n  \"baseline\": " << quote(data.baseline);
  o << ",\n  \"context_creation_ns\": " << t.context_creation_ns
    << ",\n  \"kind_disagreements\": " << t.kind_disagreements << "\n}\n";
}

}  // namespace asynccheck::report
