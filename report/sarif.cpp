// SARIF 2.1.0 for code scanning (GitHub code scanning, the VS Code SARIF viewer): the rule catalog, one result per
// call site (suppressed ones marked as such), its call stack, and what the run could not see as tool notifications.
// The layout is documented in docs/report-format.md and checked against the official schema in
// tests/report/validate_sarif.py.
#include <filesystem>
#include <optional>
#include <ostream>

#include "analysis/monitoring.h"
#include "report/plural.h"
#include "report/report.h"
#include "report/source_root.h"
#include "report/suppressions.h"
#include "version.h"

namespace asynccheck::report {
namespace {

// The project's version, from CMakeLists.txt's project(asynccheck VERSION ...) through the configured version.h.
constexpr std::string_view kToolVersion = ASYNCCHECK_VERSION;
// The project's home page, an absolute URI as SARIF requires of informationUri (3.19.17): project(... HOMEPAGE_URL)
// through version.h, by default the installed README.md as a file:// URI (CMakeLists.txt).
constexpr std::string_view kInformationUri = ASYNCCHECK_HOMEPAGE_URL;
// The address editors and viewers resolve the schema from (SchemaStore's copy of the OASIS schema).
constexpr std::string_view kSchemaUri = "https://json.schemastore.org/sarif-2.1.0.json";
// The conventional name GitHub code scanning and the SARIF SDK use for the checkout's root.
constexpr std::string_view kSrcRoot = "SRCROOT";
// Versioned so that a change to baseline.h's fingerprint can move to v2 without colliding with old alerts.
constexpr std::string_view kFingerprintKey = "asyncCheckSite/v1";

// A JSON value built in memory and written pretty-printed. Objects keep their insertion order, so the same report
// always gives the same bytes (the goldens compare them).
class Json {
 public:
  static Json object() { return Json(Kind::Object); }
  static Json array() { return Json(Kind::Array); }
  static Json string(std::string_view s) { return scalar(json_string(s)); }
  static Json number(uint64_t n) { return scalar(std::to_string(n)); }
  static Json integer(int64_t n) { return scalar(std::to_string(n)); }
  static Json boolean(bool b) { return scalar(b ? "true" : "false"); }
  static Json null() { return scalar("null"); }

  Json& set(std::string_view key, Json value) {
    keys_.emplace_back(key);
    values_.push_back(std::move(value));
    return *this;
  }
  Json& push(Json value) {
    values_.push_back(std::move(value));
    return *this;
  }
  bool empty() const { return values_.empty(); }

  void write(std::ostream& out, size_t depth) const {
    if (kind_ == Kind::Scalar) {
      out << text_;
      return;
    }
    const bool is_object = kind_ == Kind::Object;
    if (values_.empty()) {
      out << (is_object ? "{}" : "[]");
      return;
    }
    const std::string pad(2 * (depth + 1), ' ');
    out << (is_object ? "{\n" : "[\n");
    for (size_t i = 0; i < values_.size(); ++i) {
      out << pad;
      if (is_object) out << json_string(keys_[i]) << ": ";
      values_[i].write(out, depth + 1);
      out << (i + 1 < values_.size() ? ",\n" : "\n");
    }
    out << std::string(2 * depth, ' ') << (is_object ? '}' : ']');
  }

 private:
  enum class Kind : uint8_t { Scalar, Array, Object };
  explicit Json(Kind kind) : kind_(kind) {}
  static Json scalar(std::string text) {
    Json j(Kind::Scalar);
    j.text_ = std::move(text);
    return j;
  }

  Kind kind_;
  std::string text_;               // a scalar's JSON text: a quoted string, a number, true or false
  std::vector<std::string> keys_;  // an object's keys, parallel to values_
  std::vector<Json> values_;       // an object's values or an array's items
};

Json str(std::string_view s) { return Json::string(s); }

Json message(std::string_view text) { return Json::object().set("text", str(text)); }

// ---- URIs ----

// Percent-encodes a file path for a URI. Left as they are: RFC 3986's unreserved characters, '/', '@' and the
// sub-delimiters; everything else (space, '%', '#', '?', non-ASCII bytes...) is encoded. ':' is encoded too, so that
// the first segment of a relative reference never reads as a scheme.
std::string uri_escape(std::string_view path) {
  static constexpr std::string_view kKeep = "-._~/@!$&'()*+,;=";
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || kKeep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

std::string root_uri(const std::string& root) { return "file://" + uri_escape(root) + (root == "/" ? "" : "/"); }

// Files under the root are relative to SRCROOT (so that code scanning maps them onto the checkout), other absolute
// files are file:// URIs, and relative ones (debug info without its compilation directory) stay relative without a
// base: we do not know what they are relative to (glibc's "./csu/../sysdeps/..." is no file of the checkout).
Json artifact_location(const std::string& file, const std::string& root) {
  const std::filesystem::path p = std::filesystem::path(file).lexically_normal();
  const std::string normal = p.string();
  Json loc = Json::object();
  if (!p.is_absolute()) return loc.set("uri", str(uri_escape(normal)));
  if (auto rel = under_root(normal, root)) return loc.set("uri", str(uri_escape(*rel))).set("uriBaseId", str(kSrcRoot));
  return loc.set("uri", str("file://" + uri_escape(normal)));
}

// ---- locations ----

bool has_function(const Frame& f) { return !f.function.empty() && f.function != "??"; }

Json physical_location(const Frame& f, const std::string& root) {
  Json phys = Json::object();
  phys.set("artifactLocation", artifact_location(f.file, root));
  if (f.line > 0) phys.set("region", Json::object().set("startLine", Json::integer(f.line)));
  return phys;
}

Json function_location(const Frame& f) {
  return Json::array().push(Json::object().set("fullyQualifiedName", str(f.function)).set("kind", str("function")));
}

// A frame without a function name still has its module: one logical location, never two for one place (SARIF
// reserves several logical locations for equivalent names of the same construct).
Json logical_locations(const Frame& f) {
  if (has_function(f)) return function_location(f);
  Json mod = Json::object().set("name", str(std::filesystem::path(f.module).filename().string()));
  return Json::array().push(mod.set("fullyQualifiedName", str(f.module)).set("kind", str("module")));
}

// Where a result is: the source line when the site has one, otherwise its function or module, described in words.
Json result_location(const CallSite& site, const std::string& root) {
  const Frame& f = site.frame;
  Json loc = Json::object();
  if (!f.file.empty()) {
    loc.set("physicalLocation", physical_location(f, root));
    if (has_function(f)) loc.set("logicalLocations", function_location(f));
    return loc;
  }
  if (has_function(f) || !f.module.empty()) loc.set("logicalLocations", logical_locations(f));
  const std::string where = site.known() ? "call site " + site.where() : "call site unknown: no stack captured";
  return loc.set("message", message(where));
}

Json stack_frame(const Frame& f, const std::string& root) {
  Json loc = Json::object();
  if (!f.file.empty()) loc.set("physicalLocation", physical_location(f, root));
  if (has_function(f)) loc.set("logicalLocations", function_location(f));
  Json frame = Json::object();
  if (!loc.empty()) frame.set("location", std::move(loc));
  if (!f.module.empty()) frame.set("module", str(f.module));
  return frame;
}

Json call_stack(const CallSite& site, const std::string& root) {
  Json frames = Json::array();
  for (const Frame& f : site.frames) frames.push(stack_frame(f, root));
  Json stack = Json::object().set("message", message("the calling thread's stack, innermost frame first"));
  return Json::array().push(stack.set("frames", std::move(frames)));
}

// ---- rules ----

// "copy-async-pageable-h2d" -> "CopyAsyncPageableH2d": SARIF wants a readable name beside the opaque id.
std::string camel_name(std::string_view id) {
  std::string out;
  bool start = true;
  for (char c : id) {
    if (c == '-') {
      start = true;
      continue;
    }
    out += start && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    start = false;
  }
  return out;
}

// Escapes the characters that would otherwise format Markdown, so that the catalog's plain text renders as written.
std::string markdown_text(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\`*_[]<>#|").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

Json rule_descriptor(const rules::Rule& r) {
  const std::string text = "Fix: " + std::string(r.fix) + "\n\nDocumented at " + std::string(r.url);
  const std::string markdown =
      "**Fix:** " + markdown_text(r.fix) + "\n\n[NVIDIA's documentation](" + std::string(r.url) + ")";
  Json rule = Json::object();
  rule.set("id", str(r.id)).set("name", str(camel_name(r.id)));
  rule.set("shortDescription", message(r.title)).set("fullDescription", message(r.basis));
  rule.set("helpUri", str(r.url)).set("help", message(text).set("markdown", str(markdown)));
  rule.set("defaultConfiguration", Json::object().set("level", str(rules::level_name(r.level))));
  return rule.set("properties", Json::object().set("tags", Json::array().push(str("cuda")).push(str("performance"))));
}

Json tool() {
  Json rules_json = Json::array();
  for (const rules::Rule& r : rules::all_rules()) rules_json.push(rule_descriptor(r));
  Json driver = Json::object();
  driver.set("name", str("asynccheck")).set("version", str(kToolVersion)).set("semanticVersion", str(kToolVersion));
  driver.set("informationUri", str(kInformationUri));
  return Json::object().set("driver", driver.set("rules", std::move(rules_json)));
}

int64_t rule_index(rules::RuleId id) {
  const auto all = rules::all_rules();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].rule == id) return static_cast<int64_t>(i);
  }
  return -1;
}

// ---- results ----

std::string sentence(std::string s) {
  if (!s.empty() && s.back() != '.') s += '.';
  return s;
}

// The first sentence is what viewers show when space is short: what the call cost, then why and what to do.
std::string measure_text(const SiteRow& row) {
  const std::string calls = counted(row.count, "call");
  std::string s = row.api + (row.gpu_side ? " held back GPU work in other streams " : " held the host thread ") +
                  format_duration(row.total_ns) + " in total over " + calls;
  s += " (median " + format_duration(row.median_ns) + ", max " + format_duration(row.max_ns);
  if (row.bytes) s += ", " + format_bytes(row.bytes);
  if (row.gpu_side) return s + "); the host thread was not held.";
  return s + "): waited " + format_duration(row.waited_ns) + " for GPU work, " + format_duration(row.own_ns) +
         " own cost.";
}

std::string result_text(const SiteRow& row) {
  std::string s = measure_text(row);
  if (!row.site.library_entry.empty()) s += " Inside " + row.site.library_entry + ", called at this location.";
  const std::string nvtx = nvtx_text(row);
  if (!nvtx.empty()) s += " I" + sentence(nvtx.substr(1));  // "In NVTX range ..."
  if (row.processes.size() > 1) {
    s += " From " + std::to_string(row.processes.size()) + " processes; the median is estimated from theirs.";
  }
  const SiteExample& ex = row.shown;
  if (!ex.evidence.empty()) s += " Evidence: " + sentence(ex.evidence);
  if (row.verdict == Verdict::ObservedUndocumented && !ex.predicted.empty()) {
    s += " Not documented: the rules predict '" + ex.predicted + "' (" + ex.predicted_behavior + ") for this call.";
  }
  if (!ex.note.empty()) s += " Note: " + sentence(ex.note);
  return s + " Fix: " + sentence(std::string(rules::rule(row.rule).fix));
}

Json result_properties(const SiteRow& row) {
  Json p = Json::object();
  p.set("api", str(row.api)).set("count", Json::number(row.count)).set("totalNs", Json::number(row.total_ns));
  p.set("waitedNs", Json::number(row.waited_ns)).set("ownNs", Json::number(row.own_ns));
  p.set("belowThreshold", Json::number(row.below));
  p.set("medianNs", Json::number(row.median_ns)).set("maxNs", Json::number(row.max_ns));
  p.set("bytes", Json::number(row.bytes));
  p.set("verdict", str(verdict_text(row.verdict))).set("gpuSide", Json::boolean(row.gpu_side));
  if (!row.site.library_entry.empty()) p.set("libraryEntry", str(row.site.library_entry));
  // Only where the findings happened in NVTX ranges: the innermost range of most of them, and every range with
  // its count (docs/report-format.md).
  if (!row.nvtx.empty()) {
    Json ranges = Json::array();
    for (const RangeCount& r : row.nvtx) {
      Json range =
          Json::object().set("name", str(r.name)).set("domain", str(r.domain)).set("count", Json::number(r.count));
      if (!r.enclosing.empty()) {
        Json path = Json::array();
        for (const RangeName& up : r.enclosing)
          path.push(Json::object().set("name", str(up.name)).set("domain", str(up.domain)));
        path.push(Json::object().set("name", str(r.name)).set("domain", str(r.domain)));
        range.set("path", std::move(path));
      }
      ranges.push(std::move(range));
    }
    p.set("nvtxRange", str(row.nvtx[0].name)).set("nvtxRanges", std::move(ranges));
  }
  if (row.processes.empty()) return p;
  Json procs = Json::array();
  for (const ProcessShare& share : row.processes) {
    Json one = Json::object().set("pid", Json::integer(share.pid));
    one.set("rank", share.rank >= 0 ? Json::integer(share.rank) : Json::null());
    procs.push(one.set("count", Json::number(share.count))
                   .set("totalNs", Json::number(share.total_ns))
                   .set("maxNs", Json::number(share.max_ns)));
  }
  return p.set("processes", std::move(procs));
}

// Which suppression hid `row`, in the words of the suppression file.
Json suppression_of(const ReportData& data, const SiteRow& row) {
  const int i = match_suppression(data.suppressions, row);
  std::string why = "suppressed by a suppression file";
  if (i >= 0) {
    const SuppressionUse& u = data.suppressions[static_cast<size_t>(i)];
    why = u.rule + ":" + u.pattern + " from " + u.origin;
  }
  return Json::array().push(Json::object().set("kind", str("external")).set("justification", str(why)));
}

Json result(const ReportData& data, const SiteRow& row, const std::string& root, bool suppressed) {
  Json r = Json::object();
  r.set("ruleId", str(rules::rule(row.rule).id)).set("ruleIndex", Json::integer(rule_index(row.rule)));
  r.set("level", str(rules::level_name(row.level))).set("message", message(result_text(row)));
  r.set("locations", Json::array().push(result_location(row.site, root)));
  if (!row.fingerprint.empty()) r.set("partialFingerprints", Json::object().set(kFingerprintKey, str(row.fingerprint)));
  if (!row.site.frames.empty()) r.set("stacks", call_stack(row.site, root));
  if (suppressed) r.set("suppressions", suppression_of(data, row));
  if (!data.baseline.empty()) r.set("baselineState", str(row.in_baseline ? "unchanged" : "new"));
  return r.set("properties", result_properties(row));
}

Json results(const ReportData& data, const std::string& root) {
  Json out = Json::array();
  for (const SiteRow& row : data.rows) out.push(result(data, row, root, false));
  for (const SiteRow& row : data.suppressed) out.push(result(data, row, root, true));
  return out;
}

// ---- the run ----

Json notification(std::string_view level, const std::string& text) {
  return Json::object().set("level", str(level)).set("message", message(text));
}
Json warning(const std::string& text) { return notification("warning", text); }

// What limits the results: they are only as complete as what the run could observe.
Json notifications(const RunInfo& run) {
  Json out = Json::array();
  // An error, not a warning: the run checked nothing (or nothing after monitoring stopped), and executionSuccessful
  // says so (SARIF 2.1.0 3.20.14: a run that is not successful has an error-level notification saying why).
  if (monitoring_stopped(run.monitoring)) {
    out.push(notification("error", "monitoring " + run.monitoring +
                                       "; what the program did after that was not watched (the results before it "
                                       "are kept)"));
  } else if (monitoring_off(run.monitoring)) {
    out.push(notification("error", "monitoring was " + run.monitoring + "; nothing was watched"));
  }
  if (!run.complete) out.push(warning("the run ended before everything was flushed; the results may be incomplete"));
  if (run.dropped_records) {
    const std::string dropped = counted(run.dropped_records, "activity record");
    out.push(
        warning(dropped + (run.dropped_records == 1 ? " was" : " were") + " DROPPED by CUPTI; evidence is incomplete"));
  }
  if (run.unanalyzed_calls) {
    out.push(warning(counted(run.unanalyzed_calls, "ordinary call") + (run.unanalyzed_calls == 1 ? " was" : " were") +
                     " counted but not analyzed (the "
                     "analysis fell behind the program: compact_backlog); evidence may be incomplete"));
  }
  return out;
}

// One process's invocation: a run's only one, or one per process of a merge (`file`: the report it came from).
Json invocation(const RunInfo& run, const std::string& file) {
  Json args = Json::array();
  for (const std::string& a : run.args) args.push(str(a));
  Json p = Json::object();
  if (!file.empty()) p.set("report", str(file));
  p.set("program", str(run.program)).set("args", std::move(args)).set("pid", Json::integer(run.pid));
  if (run.rank >= 0) p.set("rank", Json::integer(run.rank)).set("rankVariable", str(run.rank_variable));
  p.set("gpu", str(run.gpu)).set("driver", str(run.driver)).set("cudaRuntime", str(run.cuda_runtime));
  p.set("monitoring", str(run.monitoring)).set("complete", Json::boolean(run.complete));
  p.set("droppedRecords", Json::number(run.dropped_records)).set("thresholdNs", Json::number(run.threshold_ns));
  p.set("costThresholdNs", Json::number(run.cost_threshold_ns));
  if (run.unanalyzed_calls) p.set("unanalyzedCalls", Json::number(run.unanalyzed_calls));
  Json inv = Json::object();
  // Successful only when the whole run was watched: a run whose monitoring was off found nothing because it looked
  // at nothing, one whose monitoring stopped looked at part of it; code scanning must not take either for clean.
  inv.set("executionSuccessful", Json::boolean(monitoring_whole(run.monitoring)))
      .set("toolExecutionNotifications", notifications(run));
  return inv.set("properties", std::move(p));
}

Json invocations(const ReportData& data) {
  Json out = Json::array();
  if (data.processes.empty()) return out.push(invocation(data.run, ""));
  for (const ProcessInfo& p : data.processes) out.push(invocation(p.run, p.file));
  return out;
}

Json run_properties(const ReportData& data) {
  Json sups = Json::array();
  for (const SuppressionUse& u : data.suppressions) {
    Json s = Json::object();
    s.set("rule", str(u.rule)).set("pattern", str(u.pattern)).set("origin", str(u.origin));
    sups.push(s.set("sites", Json::number(u.sites)).set("calls", Json::number(u.calls)));
  }
  Json p = Json::object().set("suppressions", std::move(sups));
  if (!data.baseline.empty()) p.set("baseline", str(data.baseline));
  // Only with a capture range: what it left out (all of it, when the range never opened).
  if (!data.run.capture_range.empty()) {
    p.set("captureRange", str(data.run.capture_range));
    p.set("callsOutsideCaptureRange", Json::number(data.totals.outside_range_calls));
    p.set("callsWatched", Json::number(data.totals.calls_watched));
  }
  return p;
}

Json run(const ReportData& data) {
  const std::string root = normalized_root(data.source_root);  // the source_root option, else the working directory
  Json r = Json::object();
  r.set("tool", tool()).set("invocations", invocations(data));
  r.set("originalUriBaseIds", Json::object().set(kSrcRoot, Json::object().set("uri", str(root_uri(root)))));
  return r.set("results", results(data, root)).set("properties", run_properties(data));
}

}  // namespace

void write_sarif(std::ostream& out, const ReportData& data) {
  Json log = Json::object();
  log.set("$schema", str(kSchemaUri)).set("version", str("2.1.0"));
  log.set("runs", Json::array().push(run(data)));
  log.write(out, 0);
  out << "\n";
}

}  // namespace asynccheck::report
