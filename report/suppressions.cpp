#include "report/suppressions.h"
#include "report/report.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "rules/catalog.h"

namespace asynccheck::report {
namespace {

constexpr std::string_view kFormat = "RULE:PATTERN, e.g. free-waits-for-device:libfoo.so";
constexpr size_t kMaxSuggestions = 3;

// A '#' at the start of the line or after whitespace starts a comment; one inside a word ("{lambda()#1}") does not.
std::string_view strip_comment(std::string_view line) {
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return line.substr(0, i);
  }
  return line;
}

// The '-'-separated words of a rule id of at least 3 characters ("h2d" counts, "a" would not).
std::vector<std::string_view> words(std::string_view id) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= id.size()) {
    size_t end = id.find('-', start);
    if (end == std::string_view::npos) end = id.size();
    if (end - start >= 3) out.push_back(id.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Words equal, or one a prefix of the other ("sync" and "syncs").
bool same_word(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  return a.substr(0, n) == b.substr(0, n);
}

size_t shared_words(std::string_view a, std::string_view b) {
  size_t n = 0;
  for (std::string_view wa : words(a)) {
    for (std::string_view wb : words(b)) {
      if (same_word(wa, wb)) {
        ++n;
        break;
      }
    }
  }
  return n;
}

// Levenshtein distance, one row at a time (the callers bound the lengths).
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Up to kMaxSuggestions rule ids close to `typed`: shared words or typos (small edit distance), best first; case
// is ignored here only (rule ids are lower case, matching them is not).
std::vector<std::string_view> close_rules(std::string_view typed) {
  struct Candidate {
    size_t shared;
    size_t distance;
    std::string_view id;
  };
  std::vector<Candidate> found;
  if (typed.size() > 64) return {};  // nobody mistypes a 30-character id into 64: nothing useful to suggest
  std::string id(typed);
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const rules::Rule& r : rules::all_rules()) {
    const size_t shared = shared_words(id, r.id);
    const size_t distance = edit_distance(id, r.id);
    if (shared > 0 || distance <= std::max<size_t>(2, r.id.size() / 3)) found.push_back({shared, distance, r.id});
  }
  std::stable_sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) {
    if (a.shared != b.shared) return a.shared > b.shared;
    return a.distance < b.distance;
  });
  std::vector<std::string_view> out;
  for (size_t i = 0; i < found.size() && i < kMaxSuggestions; ++i) out.push_back(found[i].id);
  return out;
}

std::string unknown_rule(std::string_view id) {
  const std::vector<std::string_view> close = close_rules(id);
  std::string what = "unknown rule '" + shown(id) + "' (valid: a rule id or '*'; ";
  if (close.empty()) return what + "run `asynccheck --list-rules` to list them)";
  what += "did you mean ";
  for (size_t i = 0; i < close.size(); ++i) {
    if (i > 0) what += i + 1 == close.size() ? " or " : ", ";
    what += "'" + std::string(close[i]) + "'";
  }
  return what + "? `asynccheck --list-rules` lists them all)";
}

// Parses one line that is not blank once its comment is stripped; "" or what is wrong with it.
std::string parse_line(std::string_view line, SuppressionUse& use) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    return "missing ':' between rule and pattern in '" + shown(line) + "' (valid: " + std::string(kFormat) + ")";
  }
  const std::string_view rule = trim_line(line.substr(0, colon));
  const std::string_view pattern = trim_line(line.substr(colon + 1));
  if (rule.empty()) return "empty rule before ':' (valid: a rule id from `asynccheck --list-rules` or '*')";
  if (rule != "*" && rule.find_first_of("*?") != std::string_view::npos) {
    return "rule '" + shown(rule) +
           "' is a glob, only patterns are (valid: one rule id from `asynccheck --list-rules`, "
           "or '*' alone for every rule)";
  }
  if (rule != "*" && !rules::find_rule(rule)) return unknown_rule(rule);
  if (pattern.empty()) {
    return "empty pattern after '" + std::string(rule) +
           ":' (valid: a glob over API, function, file or module; '*' "
           "matches every site)";
  }
  if (pattern.size() > kMaxPatternLength) {
    return "pattern is " + std::to_string(pattern.size()) + " bytes long (valid: at most " +
           std::to_string(kMaxPatternLength) + ")";
  }
  use.rule = rule;
  use.pattern = pattern;
  return {};
}

// Checks the bounds and bytes of line `number`, then parses it; "" or what is wrong with it.
std::string check_and_parse(std::string_view raw, size_t number, SuppressionUse& use, bool& has_use) {
  has_use = false;
  if (std::string bad = check_line_bounds(raw, number, kMaxSuppressionLines, kMaxSuppressionLineLength); !bad.empty()) {
    return bad;
  }
  const std::string_view line = trim_line(strip_comment(raw));
  if (line.empty()) return {};
  has_use = true;
  return parse_line(line, use);
}

// The pattern matches one frame: its function, or its file or module by whole path or base name. Unknown
// functions ("??") and missing files or modules are not matched, so that '?' patterns cannot match "??".
bool matches_frame(std::string_view pattern, const Frame& f) {
  if (!f.function.empty() && f.function != "??" && glob_match(pattern, f.function)) return true;
  for (const std::string* path : {&f.file, &f.module}) {
    if (path->empty()) continue;
    if (glob_match(pattern, *path) || glob_match(pattern, base_name(*path))) return true;
  }
  return false;
}

bool matches(const SuppressionUse& s, const SiteRow& row) {
  if (s.rule != "*" && s.rule != rules::rule(row.rule).id) return false;
  if (glob_match(s.pattern, row.api)) return true;
  if (row.site.known() && matches_frame(s.pattern, row.site.frame)) return true;
  return std::any_of(row.site.frames.begin(), row.site.frames.end(),
                     [&](const Frame& f) { return matches_frame(s.pattern, f); });
}

}  // namespace

std::string_view trim_line(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const size_t last = line.find_last_not_of(" \t\r");
  return line.substr(first, last - first + 1);
}

std::string check_line_bounds(std::string_view raw, size_t number, size_t max_lines, size_t max_length) {
  if (number > max_lines) {
    return "more than " + std::to_string(max_lines) + " lines (valid: at most " + std::to_string(max_lines) + ")";
  }
  if (raw.size() > max_length) {
    return "line is " + std::to_string(raw.size()) + " bytes long (valid: at most " + std::to_string(max_length) + ")";
  }
  return invalid_bytes(raw);
}

std::string invalid_bytes(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF line ending
  for (size_t i = 0; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    const std::string column = std::to_string(i + 1);
    if (c == 0) return "NUL byte at column " + column + " (valid: a text file)";
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", c);
      return "control character " + std::string(hex) + " at column " + column + " (valid: printable text and tabs)";
    }
  }
  return {};
}

std::string shown(std::string_view s) {
  constexpr size_t kShown = 64;
  return s.size() <= kShown ? std::string(s) : std::string(s.substr(0, kShown)) + "...";
}

bool read_input_file(const std::string& path, std::string_view kind, size_t max_bytes, std::string& out,
                     std::string& error) {
  const std::string prefix = "cannot read " + std::string(kind) + " file '" + path + "': ";
  if (!check_input_file(path, std::string(kind) + " file", max_bytes, error)) return false;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = prefix + std::strerror(errno);
    return false;
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = prefix + std::strerror(errno);  // a directory fails here, with EISDIR
      close(fd);
      return false;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > max_bytes) {  // stop reading /dev/zero and friends at the bound
      error = prefix + "larger than " + std::to_string(max_bytes) + " bytes (valid: at most " +
              std::to_string(max_bytes) + ")";
      close(fd);
      return false;
    }
  }
  close(fd);
  out = std::move(text);
  return true;
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Classic two-pointer matching: on a mismatch, only the most recent '*' is retried one character further, which
  // is enough (an earlier '*' could only absorb what the later one can) and bounds the work to pattern * text.
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos;  // position of the last '*' seen in the pattern
  size_t resume = 0;                     // where in the text that '*' match would resume
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool parse_suppressions(std::string_view text, const std::string& name, std::vector<SuppressionUse>& out,
                        std::string& error) {
  std::vector<SuppressionUse> parsed;
  size_t number = 0;
  size_t start = 0;
  while (start < text.size()) {  // a final '\n' does not open one more line
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    SuppressionUse use;
    bool has_use = false;
    if (std::string what = check_and_parse(text.substr(start, end - start), number, use, has_use); !what.empty()) {
      error = name + ":" + std::to_string(number) + ": " + what;
      return false;
    }
    if (has_use) {
      use.origin = name + ":" + std::to_string(number);
      parsed.push_back(std::move(use));
    }
    start = end + 1;
  }
  out.insert(out.end(), std::make_move_iterator(parsed.begin()), std::make_move_iterator(parsed.end()));
  return true;
}

bool load_suppressions(const std::string& path, std::vector<SuppressionUse>& out, std::string& error) {
  std::string text;
  if (!read_input_file(path, "suppression", kMaxSuppressionFileBytes, text, error)) return false;
  return parse_suppressions(text, path, out, error);
}

int match_suppression(const std::vector<SuppressionUse>& sups, const SiteRow& row) {
  for (size_t i = 0; i < sups.size(); ++i) {
    if (matches(sups[i], row)) return static_cast<int>(i);
  }
  return -1;
}

void apply_suppressions(ReportData& data) {
  std::vector<SiteRow> kept;
  for (SiteRow& row : data.rows) {
    const int i = match_suppression(data.suppressions, row);
    if (i < 0) {
      kept.push_back(std::move(row));
      continue;
    }
    SuppressionUse& use = data.suppressions[static_cast<size_t>(i)];
    use.sites += 1;
    use.calls += row.count;
    data.suppressed.push_back(std::move(row));
  }
  data.rows = std::move(kept);
}

}  // namespace asynccheck::report
