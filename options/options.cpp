#include "options/options.h"

#include "analysis/events.h"
#include "options/nearest.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

namespace asynccheck {
namespace {

bool parse_Bool(std::string_view name, std::string_view v, bool& out, std::string& error) {
  if (v == "1" || v == "true" || v == "yes") {
    out = true;
    return true;
  }
  if (v == "0" || v == "false" || v == "no") {
    out = false;
    return true;
  }
  error = "option '" + std::string(name) + "': '" + std::string(v) +
          "' is not a boolean (valid: 1, 0, true, false, yes, no)";
  return false;
}

bool parse_Uint(std::string_view name, std::string_view v, uint64_t& out, std::string& error) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    error = "option '" + std::string(name) + "': '" + std::string(v) + "' is not a non-negative whole number";
    return false;
  }
  return true;
}

bool parse_Duration(std::string_view name, std::string_view v, uint64_t& out, std::string& error) {
  if (parse_duration(v, out)) return true;
  error = "option '" + std::string(name) + "': '" + std::string(v) +
          "' is not a duration (valid: a whole number with ns, us, ms or s, e.g. 100us, 2ms; no unit means us)";
  return false;
}

bool parse_Text(std::string_view, std::string_view v, std::string& out, std::string&) {
  out = std::string(v);
  return true;
}

bool parse_ExitCode(std::string_view name, std::string_view v, int& out, std::string& error) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n > 255) {
    error = "option '" + std::string(name) + "': '" + std::string(v) + "' is not an exit code (valid: 0 to 255)";
    return false;
  }
  out = static_cast<int>(n);
  return true;
}

bool parse_Level(std::string_view name, std::string_view v, rules::Level& out, std::string& error) {
  const std::optional<rules::Level> l = rules::parse_level(v);
  if (!l || *l == rules::Level::None) {
    error = "option '" + std::string(name) + "': '" + std::string(v) + "' is not a level (valid: note, warning, error)";
    return false;
  }
  out = *l;
  return true;
}

std::string default_Bool(bool v) { return v ? "1" : "0"; }
std::string default_Uint(uint64_t v) { return std::to_string(v); }
std::string default_Duration(uint64_t v) { return format_duration_option(v); }
std::string default_Text(const std::string& v) { return v.empty() ? "\"\"" : v; }
std::string default_ExitCode(int v) { return v < 0 ? "none" : std::to_string(v); }
std::string default_Level(rules::Level v) { return std::string(rules::level_name(v)); }

constexpr std::string_view kFormats[] = {"json", "sarif", "trace", "html"};

bool format_names_valid(std::string_view list, std::string& error);
bool library_frames_valid(std::string_view list, std::string& error);

// Ranges that the type alone does not express.
bool validate(const Options& o, std::string& error) {
  if (o.activity_buffer_kb < 64 || o.activity_buffer_kb > 262144) {
    error = "option 'activity_buffer_kb': " + std::to_string(o.activity_buffer_kb) +
            " is out of range (valid: 64 to 262144)";
    return false;
  }
  if (o.event_cache_kb > 65536) {
    error = "option 'event_cache_kb': " + std::to_string(o.event_cache_kb) + " is out of range (valid: 0 to 65536)";
    return false;
  }
  if (o.device_buffers < 2 || o.device_buffers > 250) {
    error = "option 'device_buffers': " + std::to_string(o.device_buffers) + " is out of range (valid: 2 to 250)";
    return false;
  }
  if (o.device_buffer_kb != 0 && (o.device_buffer_kb < 64 || o.device_buffer_kb > 65536)) {
    error = "option 'device_buffer_kb': " + std::to_string(o.device_buffer_kb) +
            " is out of range (valid: 0 for CUPTI's own size, or 64 to 65536)";
    return false;
  }
  if (o.compact_round < 1024 || o.compact_round > 1048576) {
    error = "option 'compact_round': " + std::to_string(o.compact_round) + " is out of range (valid: 1024 to 1048576)";
    return false;
  }
  if (o.compact_backlog != 0 && (o.compact_backlog < 2 * o.compact_round || o.compact_backlog > (uint64_t{1} << 32))) {
    error = "option 'compact_backlog': " + std::to_string(o.compact_backlog) +
            " is out of range (valid: 0 for no limit, or " + std::to_string(2 * o.compact_round) +
            " (2 x compact_round) to 4294967296)";
    return false;
  }
  if (o.flush_period != 0 && (o.flush_period < 100'000'000ull || o.flush_period > 60'000'000'000ull)) {
    error = "option 'flush_period': " + format_duration_option(o.flush_period) +
            " is out of range (valid: 0 for a forced flush every round, or 100ms to 60s)";
    return false;
  }
  if (o.threshold > 60'000'000'000ull) {
    error = "option 'threshold': " + format_duration_option(o.threshold) + " is out of range (valid: 0 to 60s)";
    return false;
  }
  if (!library_frames_valid(o.library_frames, error)) return false;
  if (!known_capture_range(o.capture_range)) {
    error = capture_range_error("option 'capture_range'", o.capture_range);
    return false;
  }
  return o.format.empty() || format_names_valid(o.format, error);
}

// Comma-separated globs, none empty; '-' (drop the default list) only as the first.
bool library_frames_valid(std::string_view list, std::string& error) {
  if (list.empty()) return true;
  std::string_view rest = list;
  for (bool first = true;; first = false) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item.empty() || (item == "-" && !first)) {
      error = "option 'library_frames': '" + std::string(list) + "' has " +
              (item.empty() ? "an empty item" : "'-' after its first item") +
              " (valid: comma-separated globs over module names, e.g. libmylib*.so*; '-' first drops the default list)";
      return false;
    }
    if (comma == std::string_view::npos) return true;
    rest = rest.substr(comma + 1);
  }
}

bool format_names_valid(std::string_view list, std::string& error) {
  std::string_view rest = list;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view f = rest.substr(0, comma);
    if (std::find(std::begin(kFormats), std::end(kFormats), f) == std::end(kFormats)) {
      error = "option 'format': '" + std::string(f) +
              "' is not a format (valid: json, sarif, trace, html; comma-separated)";
      return false;
    }
    if (comma == std::string_view::npos) return true;
    rest = rest.substr(comma + 1);
  }
}

std::string valid_names() {
  std::string out;
  for (std::string_view name : option_names()) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace

std::vector<std::string_view> option_names() {
  return {
#define OPTION(type, name, def, desc) #name,
#include "options/options.def"
#undef OPTION
  };
}

OptionKind option_kind(std::string_view name) {
#define OPTION(type, oname, def, desc) \
  if (name == #oname) return std::string_view(#type) == "Bool" ? OptionKind::Flag : OptionKind::Value;
#include "options/options.def"
#undef OPTION
  return OptionKind::Unknown;
}

bool set_option(std::string_view name, std::string_view value, Options& opts, std::string& error) {
  Options next = opts;
  bool known = false, ok = true;
#define OPTION(type, oname, def, desc)                 \
  if (name == #oname) {                                \
    known = true;                                      \
    ok = parse_##type(name, value, next.oname, error); \
  }
#include "options/options.def"
#undef OPTION
  if (!known) {
    const std::vector<std::string_view> names = option_names();
    const std::string_view near = nearest_name(name, names);
    error = "unknown option '" + std::string(name) + "'" +
            (near.empty() ? "" : "; did you mean '" + std::string(near) + "'?") + " (valid: " + valid_names() + ")";
    return false;
  }
  if (!ok || !validate(next, error)) return false;
  opts = std::move(next);
  return true;
}

namespace {

bool separator(char c) { return c == ':' || c == ' ' || c == '\t' || c == '\n'; }

// The items of ASYNCCHECK_OPTIONS: separated by ':' and whitespace; ',' belongs to values (format=json,sarif). A
// value that holds a separator is quoted, as in the sanitizers' options: name="a:b c" or name='a:b' (the quotes are
// not part of it; there is no escape inside, a value holding both quote characters cannot be given). `bad` gets a
// quote left open.
template <typename Item>
bool for_each_item(std::string_view text, Item item, std::string* bad = nullptr, bool tolerant = false) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && separator(text[i])) ++i;
    size_t j = i;
    while (j < text.size() && !separator(text[j]) && text[j] != '=') ++j;
    std::string unquoted;
    bool quoted = false;
    // A quote opens only right after the first '=': name="a:b", not save=a="b" (a path's own quote).
    if (j + 1 < text.size() && text[j] == '=' && (text[j + 1] == '"' || text[j + 1] == '\'')) {
      const size_t close = text.find(text[j + 1], j + 2);
      if (close == std::string_view::npos) {
        if (!tolerant) {
          if (bad) *bad = "a quote left open in '" + std::string(text.substr(i)) + "' (valid: name=\"value\")";
          return false;
        }
        // Recovering what is valid (parse_valid_items): the quote is a character, the item ends at a separator.
      } else {
        unquoted = std::string(text.substr(i, j + 1 - i)) + std::string(text.substr(j + 2, close - j - 2));
        quoted = true;
        j = close + 1;
      }
    }
    if (!quoted) {
      while (j < text.size() && !separator(text[j])) ++j;
    } else if (j < text.size() && !separator(text[j])) {
      size_t end = j;
      while (end < text.size() && !separator(text[end])) ++end;
      if (!tolerant) {
        if (bad)
          *bad = "'" + std::string(text.substr(i, end - i)) +
                 "' goes on after its closing quote (valid: name=\"value\" then ':' or a space)";
        return false;
      }
      i = end;  // skipped whole
      continue;
    }
    if (j == i) break;
    if (!item(quoted ? std::string_view(unquoted) : text.substr(i, j - i))) return false;
    i = j;
  }
  return true;
}

}  // namespace

std::string quoted_value(std::string_view value) {
  if (value.find_first_of(": \t\n\"'") == std::string_view::npos) return std::string(value);
  const char q = value.find('"') == std::string_view::npos ? '"' : '\'';
  return q + std::string(value) + q;
}

void parse_valid_items(std::string_view text, Options& opts) {
  const auto valid = [&](std::string_view item) {
    const size_t eq = item.find('=');
    std::string ignored;
    if (eq == std::string_view::npos) {
      if (option_kind(item) == OptionKind::Flag) set_option(item, "1", opts, ignored);
    } else {
      set_option(item.substr(0, eq), item.substr(eq + 1), opts, ignored);
    }
    return true;
  };
  for_each_item(text, valid, nullptr, /*tolerant=*/true);  // a badly quoted item must not hide the ones after it
}

bool parse_options(std::string_view text, Options& opts, std::string& error) {
  const bool items_ok = for_each_item(
      text,
      [&](std::string_view item) {
        const size_t eq = item.find('=');
        if (eq != std::string_view::npos) return set_option(item.substr(0, eq), item.substr(eq + 1), opts, error);
        // An on/off option alone is on (stats, as --stats on the command line); an unknown name is named as such.
        if (option_kind(item) == OptionKind::Value) {
          error = "expected name=value, got '" + std::string(item) + "'";
          return false;
        }
        return set_option(item, "1", opts, error);
      },
      &error);
  return items_ok && check_options(opts, error);
}

bool check_options(const Options& opts, std::string& error) {
  OutputFiles files;
  return validate(opts, error) && output_files(opts, files, error);
}

std::string options_help(const std::vector<std::string_view>& only) {
  const Options defaults;
  std::string out =
      "asynccheck options (ASYNCCHECK_OPTIONS=name=value:name=value, a value with ':' or spaces quoted: "
      "name=\"a:b\"; or --name=value):\n";
  auto shown = [&](std::string_view name) {
    return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
  };
#define OPTION(type, name, def, desc) \
  if (shown(#name))                   \
    out += "  " + std::string(#name) + " (" #type ", default " + default_##type(defaults.name) + ")\n      " desc "\n";
#include "options/options.def"
#undef OPTION
  return out;
}

bool parse_duration(std::string_view text, uint64_t& ns) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || p == text.data()) return false;
  const std::string_view unit(p, static_cast<size_t>(text.data() + text.size() - p));
  uint64_t scale = 0;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us" || unit.empty())
    scale = 1'000;
  else if (unit == "ms")
    scale = 1'000'000;
  else if (unit == "s")
    scale = 1'000'000'000;
  else
    return false;
  if (n > UINT64_MAX / scale) return false;
  ns = n * scale;
  return true;
}

std::string format_duration_option(uint64_t ns) {
  if (ns != 0 && ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns != 0 && ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

namespace {

// Standard output holds one thing: at most one report (a baseline counts), and then not the summary too. A
// recording is written as the run goes, beside the program's own output: never there.
bool reports_to_stdout_valid(const Options& o, const OutputFiles& out, std::string& error) {
  if (o.save == kStdout) {
    error =
        "option 'save': '-' (standard output) cannot hold a recording, written as the program runs beside its own "
        "output (valid: a file)";
    return false;
  }
  if (o.log_file == kStdout) {
    error = "option 'log_file': '-' is not a stream name here (valid: stdout, stderr, or a file)";
    return false;
  }
  std::string first;
  for (const auto& [name, path] : {std::pair<std::string_view, const std::string&>{"json", out.json},
                                   {"sarif", out.sarif},
                                   {"trace", out.trace},
                                   {"html", out.html},
                                   {"save_baseline", o.save_baseline}}) {
    if (path != kStdout) continue;
    if (!first.empty()) {
      error = "the " + first + " and " + std::string(name) +
              " reports are both given '-' (standard output), which holds one (valid: a file for the other)";
      return false;
    }
    first = name;
  }
  if (!first.empty() && o.log_file == "stdout") {
    error = "the " + first +
            " report goes to standard output ('-'), and so does the summary (log_file=stdout); valid: the summary "
            "on stderr (the default) or in a file";
    return false;
  }
  return true;
}

}  // namespace

bool output_files(const Options& o, OutputFiles& out, std::string& error) {
  if (!o.format.empty() && !format_names_valid(o.format, error)) return false;
  out = OutputFiles{o.json, o.sarif, o.trace, o.html};
  std::vector<std::string_view> formats;
  // No --format: --output writes JSON. A --format without --output would write nothing: an error, not a no-op.
  std::string_view rest = o.format.empty() ? std::string_view("json") : std::string_view(o.format);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view f = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (std::find(formats.begin(), formats.end(), f) == formats.end()) formats.push_back(f);
  }
  if (o.output.empty()) {
    if (!o.format.empty()) {
      error = "option 'format': '" + o.format + "' needs an output path (--output=PATH)";
      return false;
    }
    return reports_to_stdout_valid(o, out, error);
  }
  if (o.output == kStdout && formats.size() > 1) {
    error = "option 'output': '-' (standard output) holds one report, not " + std::to_string(formats.size()) +
            " (--format=" + o.format + "; valid: one format, or a file stem for several)";
    return false;
  }
  for (std::string_view f : formats) {
    std::string& slot = f == "json" ? out.json : f == "sarif" ? out.sarif : f == "html" ? out.html : out.trace;
    // One format: the path gets that format's extension unless it has it already (r.json stays r.json, r becomes
    // r.json); several: the path is a stem.
    const std::string ext = f == "trace" ? ".trace.json" : "." + std::string(f);
    const std::string_view last = f == "sarif" ? ".sarif" : f == "html" ? ".html" : ".json";
    std::string path = o.output + ext;
    if (o.output == kStdout || (formats.size() == 1 && std::string_view(o.output).ends_with(last))) path = o.output;
    if (!slot.empty() && slot != path) {
      error = "the " + std::string(f) + " report is given two paths, '" + slot + "' (option '" + std::string(f) +
              "') and '" + path + "' (option 'output'); give one";
      return false;
    }
    slot = path;
  }
  return reports_to_stdout_valid(o, out, error);
}

namespace {

// A rank or size as launchers write it: decimal digits only, at most 9 of them (no sign, no spaces).
std::optional<int64_t> whole_number(const char* text) {
  if (!text) return std::nullopt;
  const std::string_view s(text);
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

Rank rank_from(const char* (*getenv)(const char*)) {
  static constexpr std::pair<std::string_view, std::string_view> kSizeOf[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},
      {"PMI_RANK", "PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS"}};
  Rank rank;
  for (std::string_view name : kRankVariables) {
    const std::optional<int64_t> v = whole_number(getenv(std::string(name).c_str()));
    if (!v) continue;
    rank.value = *v;
    rank.variable = name;
    for (const auto& [r, size] : kSizeOf) {
      if (r != name) continue;
      if (const std::optional<int64_t> n = whole_number(getenv(std::string(size).c_str()))) {
        rank.world_size = static_cast<uint64_t>(*n);
        rank.size_variable = size;
      }
    }
    break;
  }
  return rank;
}

Rank process_rank() {
  return rank_from([](const char* name) -> const char* { return secure_getenv(name); });
}

bool per_process_path(std::string_view path) {
  return path.find("%p") != std::string_view::npos || path.find("%r") != std::string_view::npos;
}

std::string expand_path(std::string_view pattern, int pid, int64_t rank) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'p') {
        out += std::to_string(pid);
        ++i;
        continue;
      }
      if (pattern[i + 1] == 'r') {
        out += std::to_string(rank >= 0 ? rank : pid);
        ++i;
        continue;
      }
      if (pattern[i + 1] == 'h') {
        char host[256] = {};
        if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
        out += host;
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

}  // namespace asynccheck
