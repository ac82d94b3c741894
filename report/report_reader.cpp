// Reads a JSON report back (merge.h): every field json.cpp writes, checked for presence and type, with the file,
// line, column and field path in each error.
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include "analysis/monitoring.h"
#include "analysis/names.h"
#include "report/json_value.h"
#include "report/merge.h"
#include "report/report.h"

namespace asynccheck::report {
namespace {

constexpr std::string_view kValidReport = "a report written by asynccheck --json";

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// What a value is, for "found ..." in messages: its type, and a number's or short string's text.
std::string found(const JsonValue& v) {
  if (v.is_number()) return v.string();
  if (v.is_bool()) return v.boolean() ? "true" : "false";
  if (v.is_string() && v.string().size() <= 40) return "\"" + v.string() + "\"";
  return std::string(json_type_name(v.type()));
}

// Checks members one by one; the first problem is kept as the error.
class Checker {
 public:
  Checker(const std::string& name, std::string& error) : name_(name), error_(error) {}
  bool ok() const { return ok_; }

  void fail(const JsonValue& at, const std::string& path, const std::string& what) {
    if (!ok_) return;
    ok_ = false;
    error_ = name_ + ":" + std::to_string(at.line()) + ":" + std::to_string(at.column()) + ": " +
             (path.empty() ? "" : path + ": ") + what;
  }

  // A member of `type`, or nullptr (and an error, unless `optional` and absent or null).
  const JsonValue* member(const JsonValue& obj, const std::string& path, std::string_view key, JsonValue::Type type,
                          bool optional = false) {
    if (!ok_) return nullptr;
    const JsonValue* v = obj.find(key);
    if (!v || (optional && v->is_null())) {
      if (!optional) {
        fail(obj, path, "missing member \"" + std::string(key) + "\" (valid: " + std::string(kValidReport) + ")");
      }
      return nullptr;
    }
    if (v->type() != type) {
      fail(*v, join(path, key), "expected " + std::string(json_type_name(type)) + ", found " + found(*v));
      return nullptr;
    }
    return v;
  }

  std::string text(const JsonValue& obj, const std::string& path, std::string_view key) {
    const JsonValue* v = member(obj, path, key, JsonValue::Type::String);
    return v ? v->string() : std::string();
  }
  bool flag(const JsonValue& obj, const std::string& path, std::string_view key) {
    const JsonValue* v = member(obj, path, key, JsonValue::Type::Bool);
    return v && v->boolean();
  }
  // A whole number from 0 to `max`.
  uint64_t whole(const JsonValue& obj, const std::string& path, std::string_view key, uint64_t max = UINT64_MAX,
                 bool optional = false) {
    const JsonValue* v = member(obj, path, key, JsonValue::Type::Number, optional);
    if (!v) return 0;
    const std::optional<uint64_t> n = v->uint64();
    if (!n || *n > max) {
      fail(*v, join(path, key), "expected a whole number from 0 to " + std::to_string(max) + ", found " + found(*v));
      return 0;
    }
    return *n;
  }
  // A rank: absent or null (none), or a whole number.
  // RunInfo::monitoring: one of the forms of analysis/monitoring.h.
  std::string monitoring(const JsonValue& obj, const std::string& path) {
    std::string m = text(obj, path, "monitoring");
    if (ok_ && !known_monitoring(m)) fail(obj["monitoring"], join(path, "monitoring"), monitoring_error(m));
    return m;
  }
  int64_t rank(const JsonValue& obj, const std::string& path, std::string_view key = "rank") {
    return obj.has(key) && !obj[key].is_null() ? static_cast<int64_t>(whole(obj, path, key, INT32_MAX)) : -1;
  }
  const JsonValue* array(const JsonValue& obj, const std::string& path, std::string_view key, bool optional = false) {
    return member(obj, path, key, JsonValue::Type::Array, optional);
  }
  const JsonValue* object(const JsonValue& obj, const std::string& path, std::string_view key) {
    return member(obj, path, key, JsonValue::Type::Object);
  }
  // Items of an array that must be objects (strings: `strings`).
  bool each(const JsonValue& arr, const std::string& path, JsonValue::Type type) {
    for (size_t i = 0; ok_ && i < arr.items().size(); ++i) {
      const JsonValue& v = arr.items()[i];
      if (v.type() != type)
        fail(v, item(path, i), "expected " + std::string(json_type_name(type)) + ", found " + found(v));
    }
    return ok_;
  }

 private:
  const std::string& name_;
  std::string& error_;
  bool ok_ = true;
};

Frame read_frame(Checker& c, const JsonValue& f, const std::string& path) {
  Frame out;
  out.function = c.text(f, path, "function");
  out.file = c.text(f, path, "file");
  out.line = static_cast<int>(c.whole(f, path, "line", INT_MAX));
  out.module = c.text(f, path, "module");
  out.offset = c.whole(f, path, "offset", UINT64_MAX, true);
  if (f.has("ip")) {
    out.ip = c.whole(f, path, "ip");
  } else if (!out.module.empty() && out.module != kPythonModule) {
    // A report from before "ip" was written: a native frame with a module had an address (the value itself is
    // not shown anywhere; only whether there was one, which makes the site known).
    out.ip = out.offset ? out.offset : 1;
  }
  return out;
}

void read_run(Checker& c, const JsonValue& run, const std::string& path, RunInfo& r, uint64_t& calls, uint64_t& ops) {
  r.program = c.text(run, path, "program");
  if (const JsonValue* args = c.array(run, path, "args");
      args && c.each(*args, join(path, "args"), JsonValue::Type::String)) {
    for (const JsonValue& a : args->items()) r.args.push_back(a.string());
  }
  r.pid = static_cast<int>(c.whole(run, path, "pid", INT_MAX));
  r.rank = c.rank(run, path);
  if (r.rank >= 0) r.rank_variable = c.text(run, path, "rank_variable");
  r.gpu = c.text(run, path, "gpu");
  r.monitoring = c.monitoring(run, path);
  r.complete = c.flag(run, path, "complete");
  r.end = c.text(run, path, "end");
  if (run.has("fault")) r.fault = c.text(run, path, "fault");  // only after a fault
  r.dropped_records = c.whole(run, path, "dropped_records");
  r.unanalyzed_calls = c.whole(run, path, "unanalyzed_calls", UINT64_MAX, /*optional=*/true);  // newer than the format
  r.threshold_ns = c.whole(run, path, "threshold_ns");
  if (run.find("cost_threshold_ns")) r.cost_threshold_ns = c.whole(run, path, "cost_threshold_ns");
  calls = c.whole(run, path, "calls_watched");
  ops = c.whole(run, path, "gpu_operations");
}

std::optional<Verdict> parse_verdict(std::string_view text) {
  for (Verdict v :
       {Verdict::DocumentedObserved, Verdict::DocumentedNotObserved, Verdict::ObservedUndocumented, Verdict::OwnCost}) {
    if (verdict_text(v) == text) return v;
  }
  return std::nullopt;
}

// A site's NVTX ranges (SiteRow::nvtx), written only where findings happened in ranges: "nvtx_range" (the first
// range's name) and "nvtx_ranges" come together; the counts are at least 1 and add up to at most the site's count
// (findings outside any range are not listed).
// A nested range's "path": the ranges it was in, outermost first, then itself (RangeCount::enclosing).
void read_range_path(Checker& c, const JsonValue& r, const std::string& where, RangeCount& range) {
  // The capture keeps 1024 open ranges per thread and as many regions (interpose/nvtx_ranges.h).
  constexpr size_t kMaxPath = 2048;
  const std::string at = join(where, "path");
  const JsonValue* path = c.array(r, where, "path");
  if (!path || !c.each(*path, at, JsonValue::Type::Object)) return;
  const auto& items = path->items();
  if (items.size() < 2 || items.size() > kMaxPath) {
    return c.fail(*path, at,
                  std::to_string(items.size()) + " ranges (valid: 2 to " + std::to_string(kMaxPath) +
                      ": the enclosing ranges and the range itself; no path for a range in none)");
  }
  for (size_t k = 0; c.ok() && k < items.size(); ++k) {
    RangeName up{c.text(items[k], item(at, k), "domain"), c.text(items[k], item(at, k), "name")};
    if (k + 1 < items.size())
      range.enclosing.push_back(std::move(up));
    else if (c.ok() && (up.name != range.name || up.domain != range.domain))
      c.fail(items[k], item(at, k),
             "\"" + up.name + "\" is not the range itself (valid: the last entry is \"" + range.name +
                 "\" in domain \"" + range.domain + "\")");
  }
}

void read_nvtx(Checker& c, const JsonValue& s, const std::string& path, SiteRow& row) {
  if (!c.ok() || (!s.has("nvtx_range") && !s.has("nvtx_ranges"))) return;
  const std::string first = c.text(s, path, "nvtx_range");
  const JsonValue* ranges = c.array(s, path, "nvtx_ranges");
  const std::string at = join(path, "nvtx_ranges");
  if (!ranges || !c.each(*ranges, at, JsonValue::Type::Object)) return;
  if (ranges->items().empty()) {
    c.fail(*ranges, at, "empty (valid: at least one range, or neither nvtx_range nor nvtx_ranges)");
    return;
  }
  uint64_t sum = 0;
  for (size_t k = 0; c.ok() && k < ranges->items().size(); ++k) {
    const JsonValue& r = ranges->items()[k];
    const std::string where = item(at, k);
    RangeCount range;
    range.name = c.text(r, where, "name");
    range.domain = c.text(r, where, "domain");
    range.count = c.whole(r, where, "count");
    if (!c.ok()) return;
    if (r.has("path")) read_range_path(c, r, where, range);
    if (!c.ok()) return;
    if (range.count == 0)
      return c.fail(r["count"], join(where, "count"), "0 (valid: at least 1: a range is listed for its findings)");
    for (const RangeCount& seen : row.nvtx) {
      if (seen.same_range(range)) {
        return c.fail(
            r, where,
            "range \"" + range.name + "\" in domain \"" + range.domain + "\" listed twice (valid: each range once)");
      }
    }
    sum += range.count;
    row.nvtx.push_back(std::move(range));
  }
  if (sum > row.count) {
    return c.fail(*ranges, at,
                  "the ranges hold " + std::to_string(sum) + " calls, the site has " + std::to_string(row.count));
  }
  if (first != row.nvtx[0].name) {
    c.fail(s["nvtx_range"], join(path, "nvtx_range"),
           "\"" + first + "\" is not the first range of nvtx_ranges (valid: \"" + row.nvtx[0].name + "\")");
  }
}

bool read_site(Checker& c, const JsonValue& s, const std::string& path, SiteRow& row) {
  const std::string rule = c.text(s, path, "rule");
  if (!c.ok()) return false;
  const std::optional<rules::RuleId> id = rules::find_rule(rule);
  if (!id) {
    c.fail(s["rule"], join(path, "rule"), "unknown rule '" + rule + "' (valid: a rule of asynccheck --list-rules)");
    return false;
  }
  row.rule = *id;
  const std::string level = c.text(s, path, "level");
  const std::optional<rules::Level> l = rules::parse_level(level);
  if (c.ok() && !l)
    c.fail(s["level"], join(path, "level"), "'" + level + "' is not a level (valid: none, note, warning, error)");
  if (l) row.level = *l;
  const std::string verdict = c.text(s, path, "verdict");
  const std::optional<Verdict> v = parse_verdict(verdict);
  if (c.ok() && !v) {
    c.fail(s["verdict"], join(path, "verdict"),
           "'" + verdict +
               "' is not a verdict (valid: documented-and-observed, documented-but-not-observed, "
               "observed-but-undocumented, own-cost)");
  }
  if (v) row.verdict = *v;
  row.api = c.text(s, path, "api");
  if (const JsonValue* loc = c.object(s, path, "location"))
    row.site.frame = read_frame(c, *loc, join(path, "location"));
  if (s.has("library_entry")) row.site.library_entry = c.text(s, path, "library_entry");  // newer than the format
  row.count = c.whole(s, path, "count");
  const std::string measure = c.text(s, path, "measure");
  if (c.ok() && measure != "host_ns" && measure != "gpu_delay_ns") {
    c.fail(s["measure"], join(path, "measure"), "'" + measure + "' is not a measure (valid: host_ns, gpu_delay_ns)");
  }
  row.gpu_side = measure == "gpu_delay_ns";
  row.total_ns = c.whole(s, path, "total_ns");
  // Reports written before the split of host time into waited and own have neither: all of it counts as waited.
  if (s.find("waited_ns") || s.find("own_ns") || s.find("below_threshold")) {
    row.waited_ns = c.whole(s, path, "waited_ns");
    row.own_ns = c.whole(s, path, "own_ns");
    row.below = c.whole(s, path, "below_threshold");
    if (c.ok() && row.waited_ns + row.own_ns != row.total_ns) {
      c.fail(s["own_ns"], join(path, "own_ns"),
             "waited_ns " + std::to_string(row.waited_ns) + " and own_ns " + std::to_string(row.own_ns) +
                 " do not add up to total_ns " + std::to_string(row.total_ns));
    }
    if (c.ok() && row.below > row.count) {
      c.fail(s["below_threshold"], join(path, "below_threshold"),
             std::to_string(row.below) + " exceeds count " + std::to_string(row.count));
    }
  } else {
    row.waited_ns = row.total_ns;
  }
  row.median_ns = c.whole(s, path, "median_ns");
  row.max_ns = c.whole(s, path, "max_ns");
  row.bytes = c.whole(s, path, "bytes");
  row.shown.predicted = c.text(s, path, "predicted");
  row.shown.predicted_behavior = c.text(s, path, "predicted_behavior");
  row.shown.released_by = c.text(s, path, "released_by");
  row.shown.evidence = c.text(s, path, "evidence");
  row.shown.note = c.text(s, path, "note");
  row.fingerprint = c.text(s, path, "fingerprint");
  if (c.ok() && row.fingerprint.empty())
    c.fail(s["fingerprint"], join(path, "fingerprint"), "empty (valid: RULE|API|FUNCTION|FILE)");
  c.flag(s, path, "in_baseline");  // checked, not kept: a merge's own --baseline decides
  if (const JsonValue* stack = c.array(s, path, "stack");
      stack && c.each(*stack, join(path, "stack"), JsonValue::Type::Object)) {
    for (size_t k = 0; k < stack->items().size(); ++k) {
      row.site.frames.push_back(read_frame(c, stack->items()[k], item(join(path, "stack"), k)));
    }
  }
  if (!c.ok()) return false;
  // What the writer never writes: a site exists because a call was found there; its maximum is one of its calls.
  if (row.count == 0)
    c.fail(s["count"], join(path, "count"), "0 (valid: at least 1: a site has calls)");
  else if (row.max_ns > row.total_ns)
    c.fail(s["max_ns"], join(path, "max_ns"),
           std::to_string(row.max_ns) + " exceeds total_ns " + std::to_string(row.total_ns));
  else if (row.median_ns > row.max_ns)
    c.fail(s["median_ns"], join(path, "median_ns"),
           std::to_string(row.median_ns) + " exceeds max_ns " + std::to_string(row.max_ns));
  // A merged report's shares per process: they must add up to the site's totals.
  if (const JsonValue* procs = c.array(s, path, "processes", true);
      procs && c.each(*procs, join(path, "processes"), JsonValue::Type::Object)) {
    uint64_t count = 0, total = 0;
    for (size_t k = 0; k < procs->items().size(); ++k) {
      const JsonValue& p = procs->items()[k];
      const std::string at = item(join(path, "processes"), k);
      ProcessShare share;
      share.pid = static_cast<int>(c.whole(p, at, "pid", INT_MAX));
      share.rank = c.rank(p, at);
      share.count = c.whole(p, at, "count");
      share.total_ns = c.whole(p, at, "total_ns");
      share.max_ns = c.whole(p, at, "max_ns");
      count += share.count;
      total += share.total_ns;
      row.processes.push_back(share);
    }
    if (c.ok() && (count != row.count || total != row.total_ns)) {
      c.fail(*procs, join(path, "processes"),
             "the shares add up to " + std::to_string(count) + " calls and " + std::to_string(total) +
                 " ns, the site has " + std::to_string(row.count) + " and " + std::to_string(row.total_ns));
    }
  }
  read_nvtx(c, s, path, row);
  return c.ok();
}

void read_processes(Checker& c, const JsonValue& arr, ReportFile& out) {
  if (!c.each(arr, "processes", JsonValue::Type::Object)) return;
  for (size_t i = 0; i < arr.items().size(); ++i) {
    const JsonValue& p = arr.items()[i];
    const std::string at = item("processes", i);
    ProcessInfo info;
    info.file = c.text(p, at, "file");
    info.run.program = c.text(p, at, "program");
    info.run.pid = static_cast<int>(c.whole(p, at, "pid", INT_MAX));
    info.run.rank = c.rank(p, at);
    if (info.run.rank >= 0) info.run.rank_variable = c.text(p, at, "rank_variable");
    info.run.gpu = c.text(p, at, "gpu");
    info.run.monitoring = c.monitoring(p, at);
    info.run.complete = c.flag(p, at, "complete");
    info.run.end = c.text(p, at, "end");
    if (p.has("fault")) info.run.fault = c.text(p, at, "fault");
    info.run.dropped_records = c.whole(p, at, "dropped_records");
    info.run.unanalyzed_calls = c.whole(p, at, "unanalyzed_calls", UINT64_MAX, /*optional=*/true);
    info.run.threshold_ns = c.whole(p, at, "threshold_ns");
    info.calls_watched = c.whole(p, at, "calls_watched");
    info.gpu_operations = c.whole(p, at, "gpu_operations");
    out.processes.push_back(std::move(info));
  }
}

}  // namespace

bool parse_report(std::string_view text, const std::string& name, ReportFile& out, std::string& error) {
  out = ReportFile{};
  out.path = name;
  JsonValue doc;
  if (!parse_json(text, doc, error)) {
    error = name + ":" + error + " (not JSON; valid: " + std::string(kValidReport) + ")";
    return false;
  }
  Checker c(name, error);
  if (!doc.is_object()) {
    c.fail(doc, "", "expected an object, found " + found(doc) + " (valid: " + std::string(kValidReport) + ")");
    return false;
  }
  const std::string schema = c.text(doc, "", "schema");
  if (c.ok() && schema != "asynccheck-report") {
    c.fail(doc["schema"], "schema", "'" + schema + "' is not an asynccheck report (valid: asynccheck-report)");
  }
  const JsonValue* version = c.member(doc, "", "version", JsonValue::Type::Number);
  if (c.ok() && version->uint64() != std::optional<uint64_t>(kJsonSchemaVersion)) {
    c.fail(*version, "version",
           "version " + version->string() + " is not supported (valid: " + std::to_string(kJsonSchemaVersion) +
               ", what this asynccheck reads and writes)");
  }
  if (!c.ok()) return false;
  if (const JsonValue* run = c.object(doc, "", "run")) {
    read_run(c, *run, "run", out.run, out.totals.calls_watched, out.totals.gpu_operations);
    // Optional: reports written before CUDA graph capture was tracked lack it.
    out.totals.captured_calls = c.whole(*run, "run", "captured_calls", UINT64_MAX, true);
    // Only in reports of runs with a capture range.
    if (run->find("capture_range")) {
      out.run.capture_range = c.text(*run, "run", "capture_range");
      if (!known_capture_range(out.run.capture_range))
        c.fail(*run->find("capture_range"), "run.capture_range", capture_range_error("", out.run.capture_range));
      out.totals.outside_range_calls = c.whole(*run, "run", "outside_range_calls");
    }
    // Fields not in the merged report's checks but in every report (kept: they name the environment).
    out.run.driver = c.text(*run, "run", "driver");
    const std::string loading = c.text(*run, "run", "module_loading");
    const auto ml = parse_name<rules::ModuleLoading>(loading);
    if (c.ok() && !ml) {
      c.fail((*run)["module_loading"], "run.module_loading",
             "'" + loading + "' is not a module loading mode (valid: " + valid_names<rules::ModuleLoading>() + ")");
    }
    if (ml) out.run.env.module_loading = *ml;
    out.run.env.launch_blocking = c.flag(*run, "run", "launch_blocking");
  }
  if (const JsonValue* procs = c.array(doc, "", "processes", true)) read_processes(c, *procs, out);
  if (const JsonValue* sites = c.array(doc, "", "sites"); sites && c.each(*sites, "sites", JsonValue::Type::Object)) {
    for (size_t i = 0; i < sites->items().size(); ++i) {
      SiteRow row;
      if (!read_site(c, sites->items()[i], item("sites", i), row)) return false;
      out.rows.push_back(std::move(row));
    }
  }
  if (const JsonValue* no = c.object(doc, "", "not_observed")) {
    for (const auto& [rule, count] : no->members()) {
      const std::optional<rules::RuleId> id = rules::find_rule(rule);
      if (!id) {
        c.fail(count, "not_observed", "unknown rule '" + rule + "' (valid: a rule of asynccheck --list-rules)");
        return false;
      }
      out.totals.not_observed[*id] = c.whole(*no, "not_observed", rule);
    }
  }
  if (const JsonValue* sups = c.array(doc, "", "suppressions");
      sups && c.each(*sups, "suppressions", JsonValue::Type::Object)) {
    for (size_t i = 0; i < sups->items().size(); ++i) {
      const JsonValue& s = sups->items()[i];
      const std::string at = item("suppressions", i);
      SuppressionUse u;
      u.rule = c.text(s, at, "rule");
      u.pattern = c.text(s, at, "pattern");
      u.origin = c.text(s, at, "origin");
      u.sites = c.whole(s, at, "sites");
      u.calls = c.whole(s, at, "calls");
      out.suppressions.push_back(std::move(u));
    }
  }
  c.text(doc, "", "baseline");  // checked, not kept: a merge's own --baseline decides
  out.totals.context_creation_ns = c.whole(doc, "", "context_creation_ns");
  out.totals.kind_disagreements = c.whole(doc, "", "kind_disagreements");
  if (!c.ok()) return false;
  // A merged report lists its processes and every site's shares; the report of one process has neither.
  const bool merged = !out.processes.empty();
  for (size_t i = 0; i < out.rows.size(); ++i) {
    if (out.rows[i].processes.empty() == merged) {
      c.fail(doc["sites"][i], item("sites", i),
             merged
                 ? "no \"processes\" in a merged report (valid: each site's shares, as asynccheck merge writes them)"
                 : "\"processes\" in the report of one process (valid: shares only with the report's \"processes\")");
      return false;
    }
  }
  return true;
}

bool read_report(const std::string& path, ReportFile& out, std::string& error) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    error = "cannot read report '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    error = "cannot read report '" + path +
            "': it is a directory (valid: report files; let the shell expand a glob: " + path + "/*.json)";
    return false;
  }
  if (!S_ISREG(st.st_mode)) {  // a FIFO would block forever, /dev/zero never end
    error = "cannot read report '" + path + "': it is " + file_kind(st.st_mode) + " (valid: a regular file)";
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxReportFileBytes) {
    error = "cannot read report '" + path + "': larger than " + std::to_string(kMaxReportFileBytes) + " bytes";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read report '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_report(text.str(), path, out, error);
}

}  // namespace asynccheck::report
