// The repository's root (option source_root): file paths under it are reported relative to it, in JSON, in the
// summary and in SARIF (as %SRCROOT%-relative URIs), so that a report made in build/ (a CTest run), or from a
// recording analyzed on another machine, maps onto the checkout's files. Lexical only: the files named in a
// recording need not exist here.
#pragma once

#include <optional>
#include <string>

namespace asynccheck::report {

struct ReportData;

// The root as an absolute, normalized path without a trailing slash ("/" stays "/"); the working directory when
// `source_root` is empty.
std::string normalized_root(const std::string& source_root);

// `path` relative to `root` (normalized) when it lies under it.
std::optional<std::string> under_root(const std::string& path, const std::string& root);

// Takes the option: with one, files under it are shown relative to it everywhere (ReportData::shown_root); without,
// JSON and the summary show files as recorded and SARIF is relative to the working directory. The root need not
// exist here: a recording made on another machine names that machine's paths.
void set_source_root(ReportData& data, const std::string& option);

// How JSON and the summary show a file: relative to the source root given (`root`, normalized; empty: none) when it
// lies under it, else as it is.
std::string shown_file(const std::string& file, const std::string& root);

}  // namespace asynccheck::report
