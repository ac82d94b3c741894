// Baselines: the findings a CI job already knows about. `--baseline FILE` fails the run only on findings whose
// fingerprint is not in FILE; `--save-baseline FILE` writes the current run's fingerprints.
//
// A fingerprint identifies a finding across runs, machines and edits that move lines: rule id, API, and the
// call site's function and source file base name (not the line number, not addresses):
//   copy-async-pageable-h2d|cudaMemcpyAsync|main|seed000_answer.cu
// Always four fields. A site without a source file uses its module's base name instead of the file, and "??" for
// an unknown function: `free-waits-for-device|cudaFree|??|libfoo.so`. Never an offset, which changes with every
// build (the trade-off: every symbol-less finding of one rule and API in one module shares a fingerprint). A site
// with no frame at all is "RULE|API|??|??".
// In each field '\' is written "\\", '|' "\|", newline "\n", carriage return "\r", tab "\t" and other control
// bytes "\xHH", so a fingerprint is one line with exactly three unescaped '|'. A field longer than
// kMaxFingerprintField bytes is cut there (at a UTF-8 boundary) and ends in "~" and the 16 hex digits of the FNV-1a
// hash of the whole field, so that a saved baseline always loads again (see the line bound below).
//
// File format (docs/baselines.md): first line exactly kBaselineHeader; then one fingerprint a line, in any order,
// duplicates allowed; blank lines and lines starting with '#' (after whitespace) are ignored; surrounding
// whitespace is trimmed. Bounds: kMaxBaselineLines lines, kMaxBaselineLineLength bytes a line, kMaxBaselineFileBytes.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace asynccheck::report {

inline constexpr std::string_view kBaselineHeader = "asynccheck-baseline 1";

inline constexpr size_t kMaxFingerprintField = 512;      // raw bytes: escaped, at most 4 * 512 + 17
inline constexpr size_t kMaxBaselineLineLength = 16384;  // > 4 escaped fields + 3 separators
inline constexpr size_t kMaxBaselineLines = 100'000;
inline constexpr size_t kMaxBaselineFileBytes = 32u << 20;

std::string fingerprint(const SiteRow& row);

// One fingerprint field escaped as described above (exposed for the tests).
std::string escape_fingerprint_field(std::string_view field);

// The baseline file for `rows`: kBaselineHeader, then their sorted, unique fingerprints, one a line. A row whose
// `fingerprint` is empty (not made by aggregate()) gets fingerprint(row).
std::string baseline_text(const std::vector<SiteRow>& rows);

// Parses a baseline file's text and adds its fingerprints to `out`; false with `error` =
// "NAME:LINE: what is wrong (valid: what would be)", `out` then unchanged.
bool parse_baseline(std::string_view text, const std::string& name, std::set<std::string>& out, std::string& error);
// Reads and parses a baseline file; an unreadable file is "cannot read baseline file 'PATH': <strerror>".
bool load_baseline(const std::string& path, std::set<std::string>& out, std::string& error);

// Sets SiteRow::in_baseline for every row whose fingerprint is in `known` (and clears it for the others).
void mark_baseline(std::vector<SiteRow>& rows, const std::set<std::string>& known);

}  // namespace asynccheck::report
