#include "report/baseline.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "report/suppressions.h"
#include "rules/catalog.h"

namespace asynccheck::report {
namespace {

constexpr std::string_view kFingerprintFormat = "RULE|API|FUNCTION|FILE, as --save-baseline writes it";
constexpr size_t kFingerprintFields = 4;

std::string hex(uint64_t value, int digits) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%0*llx", digits, static_cast<unsigned long long>(value));
  return buffer;
}

// FNV-1a, 64 bits: stable across runs, machines and compilers (std::hash is none of these).
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

// Cuts a field longer than kMaxFingerprintField at a UTF-8 boundary and appends "~" and the hash of the whole.
std::string bounded(std::string_view field) {
  if (field.size() <= kMaxFingerprintField) return escape_fingerprint_field(field);
  size_t cut = kMaxFingerprintField;
  while (cut > 0 && (static_cast<unsigned char>(field[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return escape_fingerprint_field(field.substr(0, cut)) + "~" + hex(fnv1a(field), 16);
}

const std::string& fingerprint_of(const SiteRow& row, std::string& storage) {
  if (!row.fingerprint.empty()) return row.fingerprint;
  storage = fingerprint(row);
  return storage;
}

// What is wrong with the escapes and separators of a fingerprint line, or "".
std::string check_fingerprint(std::string_view line) {
  size_t separators = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '|') ++separators;
    if (line[i] != '\\') continue;
    const char next = i + 1 < line.size() ? line[i + 1] : '\0';
    const bool simple = next == '\\' || next == '|' || next == 'n' || next == 'r' || next == 't';
    const bool hex_escape = next == 'x' && i + 3 < line.size() &&
                            std::isxdigit(static_cast<unsigned char>(line[i + 2])) &&
                            std::isxdigit(static_cast<unsigned char>(line[i + 3]));
    if (!simple && !hex_escape) {
      return "invalid escape '" + shown(line.substr(i, 2)) + "' at column " + std::to_string(i + 1) +
             " (valid: \\\\, \\|, \\n, \\r, \\t, \\xHH)";
    }
    i += hex_escape ? 3 : 1;
  }
  if (separators + 1 != kFingerprintFields) {
    return "fingerprint '" + shown(line) + "' has " + std::to_string(separators + 1) + " field" +
           (separators == 0 ? "" : "s") + " (valid: " + std::to_string(kFingerprintFields) + " fields, " +
           std::string(kFingerprintFormat) + ")";
  }
  return {};
}

// Checks line `number` (bounds, bytes, then the header on line 1 or a fingerprint); "" or what is wrong with it.
// `fingerprint_out` is set to the fingerprint the line holds, if any.
std::string check_line(std::string_view raw, size_t number, std::string_view& fingerprint_out) {
  fingerprint_out = {};
  if (std::string bad = check_line_bounds(raw, number, kMaxBaselineLines, kMaxBaselineLineLength); !bad.empty()) {
    return bad;
  }
  const std::string_view line = trim_line(raw);
  if (number == 1) {
    if (line == kBaselineHeader) return {};
    return "expected the header '" + std::string(kBaselineHeader) + "', found " +
           (line.empty() ? std::string("an empty line") : "'" + shown(line) + "'") +
           " (valid: a file written by --save-baseline)";
  }
  if (line.empty() || line.front() == '#') return {};
  if (std::string bad = check_fingerprint(line); !bad.empty()) return bad;
  // As strict as a suppression file: a fingerprint of a rule that does not exist would never match anything.
  const std::string_view rule = line.substr(0, line.find('|'));
  if (!rules::find_rule(std::string(rule))) {
    return "unknown rule '" + shown(rule) + "' in fingerprint '" + shown(line) +
           "' (valid: a rule id; `asynccheck --list-rules` lists them)";
  }
  fingerprint_out = line;
  return {};
}

}  // namespace

std::string escape_fingerprint_field(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    const char c = field[i];
    const auto u = static_cast<unsigned char>(c);
    // The baseline reader trims each line: a space at either end of a field would be lost (found by fuzzing).
    const bool edge_space = c == ' ' && (i == 0 || i + 1 == field.size());
    if (edge_space) {
      out += "\\x20";
    } else if (c == '\\' || c == '|') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x" + hex(u, 2);
    } else {
      out += c;
    }
  }
  return out;
}

std::string fingerprint(const SiteRow& row) {
  const Frame& f = row.site.frame;
  const bool known = row.site.known();
  const std::string function = known && !f.function.empty() ? f.function : "??";
  // The source file's base name when known, else the module's (never its offset: that moves with every build).
  std::string_view where = "??";
  if (known && !f.file.empty()) {
    where = base_name(f.file);
  } else if (known && !f.module.empty()) {
    where = base_name(f.module);
  }
  return bounded(rules::rule(row.rule).id) + "|" + bounded(row.api) + "|" + bounded(function) + "|" + bounded(where);
}

std::string baseline_text(const std::vector<SiteRow>& rows) {
  std::set<std::string> unique;
  for (const SiteRow& row : rows) {
    std::string storage;
    unique.insert(fingerprint_of(row, storage));
  }
  std::string out(kBaselineHeader);
  out += '\n';
  for (const std::string& fp : unique) out += fp + "\n";
  return out;
}

bool parse_baseline(std::string_view text, const std::string& name, std::set<std::string>& out, std::string& error) {
  if (text.empty()) {
    error = name + ":1: expected the header '" + std::string(kBaselineHeader) +
            "', found an empty file (valid: a file written by --save-baseline)";
    return false;
  }
  std::set<std::string> parsed;
  size_t number = 0;
  size_t start = 0;
  while (start < text.size()) {  // a final '\n' does not open one more line
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    std::string_view fp;
    if (std::string what = check_line(text.substr(start, end - start), number, fp); !what.empty()) {
      error = name + ":" + std::to_string(number) + ": " + what;
      return false;
    }
    if (!fp.empty()) parsed.emplace(fp);
    start = end + 1;
  }
  out.insert(parsed.begin(), parsed.end());
  return true;
}

bool load_baseline(const std::string& path, std::set<std::string>& out, std::string& error) {
  std::string text;
  if (!read_input_file(path, "baseline", kMaxBaselineFileBytes, text, error)) return false;
  return parse_baseline(text, path, out, error);
}

void mark_baseline(std::vector<SiteRow>& rows, const std::set<std::string>& known) {
  for (SiteRow& row : rows) {
    std::string storage;
    row.in_baseline = known.count(fingerprint_of(row, storage)) > 0;
  }
}

}  // namespace asynccheck::report
