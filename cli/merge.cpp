// asynccheck merge [options] REPORT.json...: one report from the JSON reports of many processes (the ranks of an
// MPI job), written like any other: the summary, --json, --sarif, --html, --output/--format, a baseline, and the exit code
// of --error-exitcode/--fail-on against --baseline (report/merge.h says how sites are combined; docs/mpi.md).
//
// Exit codes: 0; N from --error-exitcode; 1 when a file could not be written; 2 for bad options or reports.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "report/merge.h"

namespace asynccheck::cli {
namespace {

constexpr std::string_view kUsage = "usage: asynccheck merge [options] REPORT.json...";

// The options that mean something for reports already made (the rest describe capture or events).
constexpr std::string_view kMergeOptions[] = {"format",       "output",         "json",     "sarif",
                                              "html",         "log_file",       "summary",  "print_limit",
                                              "suppressions", "source_root",    "baseline", "save_baseline",
                                              "overwrite",    "error_exitcode", "fail_on",  "require_monitoring"};

void print_merge_help() {
  std::cout << kUsage
            << "\n  One report from the JSON reports of many processes (the ranks of an MPI job: docs/mpi.md);\n"
               "  options and reports in any order, after \"--\" only reports. The options that apply:\n\n"
            << options_help({std::begin(kMergeOptions), std::end(kMergeOptions)});
}

std::string valid_merge_options() {
  std::string out;
  for (std::string_view o : kMergeOptions) out += (out.empty() ? "" : ", ") + dashed(o);
  return out;
}

// Options and report files in any order; after "--" only files.
bool parse_merge_args(std::vector<std::string>& args, Cli& cli, std::vector<std::string>& files, std::string& error) {
  const auto dashes = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> before(args.begin(), dashes);
  size_t i = 0;
  while (i < before.size()) {
    if (before[i].rfind("--", 0) != 0 && before[i] != "-h") {
      files.push_back(before[i++]);
      continue;
    }
    if (!parse_cli(before, i, cli, error)) return false;
  }
  if (cli.help) return true;
  if (dashes != args.end()) files.insert(files.end(), dashes + 1, args.end());
  for (const std::string& name : cli.given) {
    if (std::find(std::begin(kMergeOptions), std::end(kMergeOptions), name) == std::end(kMergeOptions)) {
      error = "option '--" + dashed(name) +
              "' does not apply to merge: reports hold findings, not events (valid: " + valid_merge_options() + ")";
      return false;
    }
  }
  if (!check_options(cli.opts, error)) return false;
  OutputFiles out;
  output_files(cli.opts, out, error);
  if (!out.trace.empty()) {
    error =
        "merge cannot write a Chrome trace: reports hold findings, not the events a trace draws (valid formats: json, "
        "sarif, html)";
    return false;
  }
  if (files.empty()) {
    error = "merge needs at least one report (" + std::string(kUsage) + ")";
    return false;
  }
  return true;
}

}  // namespace

int merge_command(std::vector<std::string>& args) {
  Cli cli;
  std::vector<std::string> files;
  std::string error;
  if (!parse_merge_args(args, cli, files, error)) return usage_error(error);
  if (cli.help) {
    print_merge_help();
    return 0;
  }
  // The merged report belongs to no one process: %p is this command's pid, %r too (a merge has no rank).
  const int pid = static_cast<int>(getpid());
  report::ReportInputs inputs;
  if (!report::prepare_report(cli.opts, pid, Rank{}, inputs, error)) return usage_error(error);
  std::vector<report::ReportFile> reports(files.size());
  for (size_t k = 0; k < files.size(); ++k) {
    if (!report::read_report(files[k], reports[k], error)) return usage_error(error);
  }
  report::ReportData data;
  if (!report::merge_reports(reports, data, error)) return usage_error(error);
  const report::Emitted e = report::write_report(data, cli.opts, inputs, pid, -1);
  const int code = exit_code_for(e, cli);
  if (code >= 0) return code;
  return e.write_failed ? report::kWriteFailedExitCode : 0;
}

}  // namespace asynccheck::cli
