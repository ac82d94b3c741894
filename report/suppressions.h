// Suppression files: findings a team has decided to live with, by rule and call site, with hit counts in the
// report (as the sanitizers do), so that a stale suppression is visible.
//
// Format (docs/suppressions.md): one suppression a line; blank lines are ignored; a '#' at the start of a line or
// after whitespace starts a comment that runs to the end of the line (a '#' inside a word, as in the demangled
// "{lambda()#1}", belongs to the pattern). Surrounding whitespace (and a trailing '\r') is trimmed.
//   RULE:PATTERN
// RULE is a rule id (`asynccheck --list-rules`) or '*'; the line is split at its first ':', so PATTERN may hold
// "::". PATTERN is a glob ('*' any run of characters, '?' exactly one byte; no escapes, no classes) matched against
// the API name ("cudaMemcpyAsync") and against every frame of the call site's stack: its function (demangled), its
// source file (whole path or base name) and its module (whole path or base name). A site is suppressed by the
// first suppression (in file order) that matches it.
//
// Bounds (an input over one is an error, never a truncation): kMaxSuppressionLines lines, kMaxSuppressionLineLength
// bytes a line, kMaxPatternLength bytes a pattern, kMaxSuppressionFileBytes bytes a file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace asynccheck::report {

inline constexpr size_t kMaxSuppressionLines = 10'000;
inline constexpr size_t kMaxSuppressionLineLength = 8192;
inline constexpr size_t kMaxPatternLength = 4096;
inline constexpr size_t kMaxSuppressionFileBytes = 4u << 20;

// Parses the text of a suppression file and appends its suppressions to `out`. `name` is used for origins
// ("name:LINE") and in errors. Returns false with `error` = "NAME:LINE: what is wrong (valid: what would be)";
// `out` is then left unchanged. A text with no suppression (empty, or only comments) is valid.
bool parse_suppressions(std::string_view text, const std::string& name, std::vector<SuppressionUse>& out,
                        std::string& error);

// Reads and parses a suppression file (appending to `out`); an unreadable file is an error
// "cannot read suppression file 'PATH': <strerror>".
bool load_suppressions(const std::string& path, std::vector<SuppressionUse>& out, std::string& error);

// Index of the first suppression in `sups` that matches `row`, or -1.
int match_suppression(const std::vector<SuppressionUse>& sups, const SiteRow& row);

// Moves the rows some suppression matches from data.rows to data.suppressed (both keep their order) and adds the
// hits to data.suppressions: `sites` += 1 and `calls` += row.count for the first suppression matching each row.
void apply_suppressions(ReportData& data);

// Glob match: '*' any run of characters (including none), '?' exactly one byte. No character classes, no escapes.
// Time O(pattern * text) in the worst case, no recursion (safe on hostile input).
bool glob_match(std::string_view pattern, std::string_view text);

// ---- shared with the baseline reader (baseline.cpp) ----

// Reads a whole input file of at most `max_bytes` into `out`. `kind` names it in errors:
// "cannot read KIND file 'PATH': <strerror>", or "...: larger than N bytes (valid: at most N)".
bool read_input_file(const std::string& path, std::string_view kind, size_t max_bytes, std::string& out,
                     std::string& error);

// `line` without surrounding spaces, tabs and a trailing '\r' (CRLF files).
std::string_view trim_line(std::string_view line);

// What is wrong with the bytes of one line ("NUL byte at column 3 (valid: ...)"), or "" if nothing: NUL and
// control characters other than tab are rejected (a trailing '\r' is allowed); bytes >= 0x80 pass (UTF-8 paths).
std::string invalid_bytes(std::string_view line);

// What is wrong with line `number` of a line-based input file before it is parsed: more than `max_lines` lines,
// longer than `max_length` bytes, or invalid bytes (invalid_bytes); "" if nothing.
std::string check_line_bounds(std::string_view raw, size_t number, size_t max_lines, size_t max_length);

// `s` for an error message: at most 64 bytes, "..." appended when cut.
std::string shown(std::string_view s);

}  // namespace asynccheck::report
