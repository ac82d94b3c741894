// asynccheck analyze RECORDING [options]: the report of a run saved with --save, anywhere, no GPU needed.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "analysis/recording.h"
#include "analysis/replay.h"
#include "cli/cli.h"
#include "cli/recordings.h"
#include "report/report.h"
#include "report/trace_stream.h"

namespace asynccheck::cli {
namespace {

constexpr std::string_view kUsage = "usage: asynccheck analyze RECORDING [options]";

void print_analyze_help() {
  std::cout << kUsage
            << "\n  The report of a run saved with --save (asynccheck --save=run.rec -- ./app), on any machine,\n"
               "  no GPU needed; options and the recording in any order. The options that describe the capture\n"
               "  (buffers, compaction, signals) do not apply. A recording saved while the run's analysis streamed\n"
               "  (the default) is analyzed in the run's own steps as it is read, at any threshold; --save then saves\n"
               "  that analysis (its judgements), which reads again only at the options it was made with.\n\n"
            << options_help();
}

}  // namespace

bool read_log(const std::string& path, EventLog& log, std::string& error, Replay* replay) {
  if (!report::check_input_file(path, "recording", kMaxRecordingBytes, error)) return false;
  std::ifstream in(path);
  if (!in) {
    error = "cannot read recording '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (!read_recording(in, log, error, replay)) {
    error = "recording '" + path + "': " + error;
    return false;
  }
  return true;
}

namespace {

// The options given here that say how to judge, over the run's own.
void judge_at(RunInfo& run, const Cli& cli) {
  if (cli.was_given("threshold") || !run.threshold_ns) run.threshold_ns = cli.opts.threshold;
  if (cli.was_given("cost_threshold")) run.cost_threshold_ns = cli.opts.cost_threshold;
  if (cli.was_given("capture_range")) run.capture_range = cli.opts.capture_range;
}

}  // namespace

int analyze_subcommand(std::vector<std::string>& args) {
  Cli cli;
  std::string error;
  // Options and the recording in any order; after "--" only the recording.
  const auto dashes = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> before(args.begin(), dashes), files;
  size_t i = 0;
  while (i < before.size()) {
    if (before[i].rfind("--", 0) != 0 && before[i] != "-h") {
      files.push_back(before[i++]);
      continue;
    }
    if (!parse_cli(before, i, cli, error)) return usage_error(error);
  }
  if (cli.help) {
    print_analyze_help();
    return 0;
  }
  if (dashes != args.end()) files.insert(files.end(), dashes + 1, args.end());
  if (!cli.read.empty()) files.insert(files.begin(), cli.read);
  if (files.empty()) return usage_error("analyze needs a recording file (" + std::string(kUsage) + ")");
  if (files.size() > 1)
    return usage_error("unexpected argument '" + files[1] + "' after the recording (" + std::string(kUsage) + ")");
  if (!check_options(cli.opts, error)) return usage_error(error);
  return analyze_command(files[0], cli);
}

int analyze_command(const std::string& path, Cli& cli) {
  std::string error;
  OutputFiles files;
  output_files(cli.opts, files, error);
  // A recording written as the run went is analyzed in the run's own steps as it is read (analysis/replay.h), its
  // trace drawn as the analysis lets the events go, as in the run.
  std::unique_ptr<report::TraceStream> trace;
  report::ReportInputs inputs;
  bool prepared = false;
  // The suppressions and baseline read, the outputs checked. %r names the recorded process's rank; no job surrounds
  // an offline analysis (world size unknown).
  auto prepare = [&](const RunInfo& run, std::string& why) {
    Rank rank;
    rank.value = run.rank;
    rank.variable = run.rank_variable;
    prepared = report::prepare_report(cli.opts, run.pid, rank, inputs, why);
    return prepared;
  };
  std::string option_error;  // the options, not the recording, stopped the reading
  Replay* replaying = nullptr;
  Replay replay([&](EventLog& head, StreamingOptions& options, std::string& why) {
    judge_at(head.run, cli);
    // Before the analysis starts, as for a recording read whole (below): not after it.
    if (!prepare(head.run, why)) {
      option_error = why;
      return false;
    }
    if (!files.trace.empty()) {
      trace = std::make_unique<report::TraceStream>();
      if (!trace->open(report::trace_events_path(files.trace, head.run.pid, head.run.rank), head.api_names, why)) {
        option_error = why = "option 'trace': " + why;
        return false;
      }
      replaying->set_sinks(trace.get(), trace.get());
    }
    options.analysis = analysis_options(head);
    return true;
  });
  replaying = &replay;
  EventLog log;
  if (!read_log(path, log, error, &replay)) return usage_error(option_error.empty() ? error : option_error);
  if (!replay.replayed() && compacted(log)) {
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
    if (cli.was_given("capture_range") && cli.opts.capture_range != log.run.capture_range) {
      return usage_error("recording '" + path + "' was analyzed as it was captured, with capture range " +
                         (log.run.capture_range.empty() ? std::string("none") : log.run.capture_range) +
                         "; it can only be analyzed with that range (record with --compact=0 to analyze with another)");
    }
    if (!files.trace.empty()) {
      return usage_error(
          "recording '" + path +
          "' was analyzed as it was captured and lacks the events a trace "
          "draws (record with --compact=0, or ask for the trace in the run: asynccheck --trace=FILE -- ...)");
    }
  }
  if (!replay.replayed()) judge_at(log.run, cli);
  if (!prepared && !prepare(log.run, error)) return usage_error(error);
  inputs.trace_stream = trace.get();
  const report::Emitted emitted = report::emit(log, nullptr, cli.opts, inputs);
  const int code = exit_code_for(emitted, cli);
  if (code >= 0) return code;
  return emitted.write_failed ? report::kWriteFailedExitCode : 0;
}

}  // namespace asynccheck::cli
