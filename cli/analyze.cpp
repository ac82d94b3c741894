// asynccheck analyze RECORDING [options]: the report of a run saved with --save, anywhere, no GPU needed.
#include <cerrno>
#include <cstring>
#include <fstream>

#include "analysis/recording.h"
#include "cli/cli.h"
#include "cli/recordings.h"
#include "report/report.h"

namespace asynccheck::cli {

bool read_log(const std::string& path, EventLog& log, std::string& error) {
  if (!report::check_input_file(path, "recording", kMaxRecordingBytes, error)) return false;
  std::ifstream in(path);
  if (!in) {
    error = "cannot read recording '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (!read_recording(in, log, error)) {
    error = "recording '" + path + "': " + error;
    return false;
  }
  return true;
}

int analyze_command(const std::string& path, Cli& cli) {
  std::string error;
  EventLog log;
  if (!read_log(path, log, error)) return usage_error(error);
  if (compacted(log)) {
    // The run was judged as it went, at its thresholds, and kept only what each site's report shows (streaming.h).
    if (cli.was_given("threshold") && cli.opts.threshold != log.run.threshold_ns) {
      return usage_error("recording '" + path +
                         "' was analyzed as it was captured, for threshold=" + std::to_string(log.run.threshold_ns) +
                         "ns; it can only be analyzed at that threshold "
                         "(record with --compact=0 to analyze at another)");
    }
    if (cli.was_given("cost_threshold") && cli.opts.cost_threshold != log.run.cost_threshold_ns) {
      return usage_error("recording '" + path + "' was analyzed as it was captured, for cost_threshold=" +
                         std::to_string(log.run.cost_threshold_ns) +
                         "ns; it can only be analyzed at that cost "
                         "threshold (record with --compact=0 to analyze at another)");
    }
    OutputFiles files;
    output_files(cli.opts, files, error);
    if (!files.trace.empty()) {
      return usage_error(
          "recording '" + path +
          "' was analyzed as it was captured and lacks the events a trace "
          "draws (record with --compact=0, or ask for the trace in the run: asynccheck --trace=FILE -- ...)");
    }
  }
  if (cli.was_given("threshold") || !log.run.threshold_ns) log.run.threshold_ns = cli.opts.threshold;
  if (cli.was_given("cost_threshold")) log.run.cost_threshold_ns = cli.opts.cost_threshold;
  report::ReportInputs inputs;
  // %r names the recorded process's rank; no job surrounds an offline analysis (world size unknown).
  Rank rank;
  rank.value = log.run.rank;
  rank.variable = log.run.rank_variable;
  if (!report::prepare_report(cli.opts, log.run.pid, rank, inputs, error)) return usage_error(error);
  const int code = exit_code_for(report::emit(log, nullptr, cli.opts, inputs), cli);
  return code >= 0 ? code : 0;
}

}  // namespace asynccheck::cli
