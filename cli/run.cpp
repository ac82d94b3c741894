// asynccheck [options] -- PROGRAM [ARGS...]: runs the program with the library attached (LD_PRELOAD), which only
// captures and saves each process's events; the command then reports every recording, one report per process.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/program.h"
#include "cli/recordings.h"
#include "analysis/recording.h"

namespace fs = std::filesystem;

namespace asynccheck::cli {
namespace {

// Where each process of the program draws its trace: a directory of the command's, one file per process, which the
// command then puts in place in pid order as it does the other reports (whichever process ended last does not win).
// The directory is made beside the trace's path when that names one, so that a trace of gigabytes is drawn on the
// filesystem the user chose and moved into place, not copied out of a small /tmp; else the command's own directory.
constexpr const char* kTraceInDir = "/trace.%p.json";

std::string trace_directory(const std::string& trace, const std::string& command_dir) {
  if (trace.empty() || trace == kStdout) return command_dir;
  std::error_code ec;
  const fs::path parent = fs::absolute(trace, ec).parent_path();
  if (ec || parent.string().find('%') != std::string::npos || !fs::is_directory(parent, ec)) return command_dir;
  std::string tmpl = (parent / ".asynccheck-trace.XXXXXX").string();
  return mkdtemp(tmpl.data()) ? tmpl : command_dir;
}

// The library's options for the program under test: it captures and analyzes, and hands its analyzed run over; the
// command reports. What the analysis judges with (thresholds, the capture range) must reach it: the hand-off is final.
// A trace is drawn by the program's process as its analysis lets the events go (report/trace_stream.h), so the
// analysis streams (bounded memory) with or without one; the hand-off holds only what the other reports show, so the
// process needs what decides the trace's suppressed findings as well: the suppressions, the library frames, the site
// threshold and the source root, with the stacks resolved there (symbolize).
std::string child_options(const Options& o, const std::string& dir, const std::string& trace_dir) {
  OutputFiles files;
  std::string error;
  output_files(o, files, error);
  std::ostringstream s;
  s << "threshold=" << o.threshold << "ns:cost_threshold=" << o.cost_threshold << "ns";
  if (!o.capture_range.empty()) s << ":capture_range=" << quoted_value(o.capture_range);
  s << ":activity_buffer_kb=" << o.activity_buffer_kb << ":device_buffers=" << o.device_buffers
    << ":device_buffer_kb=" << o.device_buffer_kb << ":signal_timeout=" << o.signal_timeout << ":compact=" << o.compact
    << ":compact_round=" << o.compact_round << ":compact_backlog=" << o.compact_backlog
    << ":event_cache_kb=" << o.event_cache_kb << ":flush_period=" << o.flush_period << "ns"
    << ":stats=" << o.stats << ":summary=0:handoff=" << quoted_value(dir + "/run.%p.rec");
  const bool trace = !files.trace.empty();
  if (trace) {
    s << ":trace=" << quoted_value(trace_dir + kTraceInDir) << ":site_threshold=" << o.site_threshold << "ns";
    // Files read at the process's start, before the program can change directory; still made absolute, as the
    // source root is (read at the end), so that both name what they name in the command.
    if (!o.suppressions.empty()) s << ":suppressions=" << quoted_value(fs::absolute(o.suppressions).string());
    if (!o.library_frames.empty()) s << ":library_frames=" << quoted_value(o.library_frames);
    if (!o.source_root.empty()) s << ":source_root=" << quoted_value(fs::absolute(o.source_root).string());
  }
  if (!o.save.empty()) s << ":overwrite=" << o.overwrite;
  // The events themselves, written by the program's process as it runs (the command reports from the hand-off),
  // with their call sites resolved there, while the binaries are on disk, so that the recording replays anywhere;
  // likewise for a trace, whose suppressed findings are matched by function and file. Without either, the command
  // resolves the sites.
  if (!o.save.empty()) s << ":save=" << quoted_value(o.save);
  s << ":symbolize=" << ((trace || !o.save.empty()) && o.symbolize);
  return s.str();
}

// The options the command reports with: the program's process wrote the recording and the trace (child_options);
// the command writes the other reports from the hand-off. --format/--output are replaced by the paths they give.
Options command_report_options(const Options& o) {
  Options r = o;
  OutputFiles files;
  std::string error;
  output_files(o, files, error);  // checked with the command line
  r.save.clear();
  r.format.clear();
  r.output.clear();
  r.json = files.json;
  r.sarif = files.sarif;
  r.html = files.html;
  r.trace.clear();
  return r;
}

// Puts process `pid`'s trace (drawn in `dir`: child_options) where the trace option says, or on standard output.
bool place_trace(const std::string& dir, const std::string& trace, const EventLog& log, bool overwrite,
                 std::string& error) {
  const fs::path drawn = expand_path(dir + kTraceInDir, log.run.pid, log.run.rank);
  std::error_code ec;
  if (!fs::exists(drawn, ec)) {
    error = "the trace of process " + std::to_string(log.run.pid) + " was not written (its error is above)";
    return false;
  }
  if (trace != kStdout)
    return report::place_file(drawn.string(), expand_path(trace, log.run.pid, log.run.rank), overwrite, error);
  std::ifstream in(drawn, std::ios::binary);
  std::cout << in.rdbuf();
  std::cout.flush();
  if (!std::cout) {
    error = "cannot write the trace of process " + std::to_string(log.run.pid) + " to standard output";
    std::cout.clear();  // the next process's report may still go there
  } else if (!in.eof() && in.fail()) {
    error = "cannot read '" + drawn.string() + "'";
  }
  return error.empty();
}

// The library is looked for from the command's own path, never from the environment, so that a command always
// attaches its own build of the library: where the installation puts it (ASYNCCHECK_LIB_FROM_BIN, the path from
// the install's bin/ to its lib/, made by cli/CMakeLists.txt), in the build tree's lib/, or next to the command.
// Not found: empty, with the places looked in.
fs::path library_path(const char* argv0, std::string& looked_in) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  fs::path self = n > 0 ? fs::path(std::string(buf, static_cast<size_t>(n))) : fs::path(argv0);
  const fs::path dir = self.parent_path();
  std::vector<fs::path> places = {(dir / ASYNCCHECK_LIB_FROM_BIN).lexically_normal(),
                                  (dir.parent_path() / "lib").lexically_normal(), dir};
  places.erase(std::unique(places.begin(), places.end()), places.end());
  for (const fs::path& p : places) {
    if (fs::exists(p / "libasynccheck.so")) return p / "libasynccheck.so";
    looked_in += (looked_in.empty() ? "" : ", ") + p.string();
  }
  return {};
}

}  // namespace

int run_command(std::vector<std::string>& args, Cli& cli, const char* argv0) {
  size_t i = 1;
  std::string error;
  if (!parse_cli(args, i, cli, error)) return usage_error(error);
  if (cli.help) {
    print_help();
    return 0;
  }
  if (!check_options(cli.opts, error)) return usage_error(error);
  if (!cli.read.empty()) {
    if (i < args.size())
      return usage_error("--read analyzes a recording: no program may follow it (got '" + args[i] + "')");
    return analyze_command(cli.read, cli);
  }
  if (i >= args.size()) return usage_error("no program to run (usage: asynccheck [options] -- PROGRAM [ARGS...])");
  if (cli.opts.save.find_first_of(": \t\n") != std::string::npos) {
    return usage_error("option 'save': '" + cli.opts.save +
                       "' holds ':' or white space, which the program's process cannot be "
                       "given (ASYNCCHECK_OPTIONS separates options by them); choose a path without them");
  }
  if (cli.opts.trace.find('"') != std::string::npos && cli.opts.trace.find('\'') != std::string::npos) {
    return usage_error("option 'trace': '" + cli.opts.trace +
                       "' holds both quote characters, which the program's process cannot be given "
                       "(ASYNCCHECK_OPTIONS quotes a value with one of them); choose a path without one");
  }
  report::ReportInputs inputs;
  if (!report::prepare_report(cli.opts, static_cast<int>(getpid()), process_rank(), inputs, error))
    return usage_error(error);
  std::string looked_in;
  const fs::path lib = library_path(argv0, looked_in);
  if (lib.empty())
    return usage_error("libasynccheck.so not found beside the asynccheck command (looked in " + looked_in + ")");
  // A program that cannot be started ends the command as it would end a shell's: same code, same words.
  if (const std::optional<NotRunnable> no = check_program(args[i], getenv("PATH"))) {
    std::cerr << "asynccheck: ERROR: " << report::printable(no->message) << "\n";
    return no->code;
  }
  char tmpl[] = "/tmp/asynccheck.XXXXXX";
  if (!mkdtemp(tmpl)) return usage_error(std::string("cannot create a temporary directory: ") + std::strerror(errno));
  const std::string dir = tmpl;
  OutputFiles files;
  output_files(cli.opts, files, error);
  const std::string& trace = files.trace;
  const std::string trace_dir = trace_directory(trace, dir);
  pid_t pid = fork();
  if (pid == 0) {
    const char* old = getenv("LD_PRELOAD");
    std::string preload = lib.string() + (old && *old ? std::string(":") + old : "");
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("ASYNCCHECK_OPTIONS", child_options(cli.opts, dir, trace_dir).c_str(), 1);
    std::vector<char*> argv;
    for (size_t k = i; k < args.size(); ++k) argv.push_back(args[k].data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    std::cerr << "asynccheck: ERROR: cannot run '" << report::printable(args[i]) << "': " << std::strerror(err) << "\n";
    _exit(exec_failure_code(err));
  }
  // The program gets the terminal's signals itself (same process group); the command waits for it.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  // A reader of our standard output that went away (`--trace=- | head`) fails a write, not the command: the
  // directories below are still removed.
  signal(SIGPIPE, SIG_IGN);
  int override_code = -1;
  bool write_failed = false;
  std::vector<fs::path> recordings;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".rec") recordings.push_back(entry.path());
  }
  const Options report_options = command_report_options(cli.opts);
  std::vector<EventLog> logs;
  for (const fs::path& path : recordings) {
    EventLog log;
    if (read_log(path, log, error)) {
      logs.push_back(std::move(log));
    } else {
      std::cerr << "asynccheck: ERROR: " << report::printable(error) << "\n";
      write_failed = true;
    }
  }
  // One report per process, in pid order (not the file names' order: pid 100002 comes after 99998).
  std::stable_sort(logs.begin(), logs.end(),
                   [](const EventLog& a, const EventLog& b) { return a.run.pid < b.run.pid; });
  const std::vector<bool> reported = command_reports(logs);
  for (size_t k = 0; k < logs.size(); ++k) {
    if (!reported[k]) continue;
    EventLog& log = logs[k];
    const report::Emitted emitted = report::emit(log, nullptr, report_options, inputs);
    write_failed |= emitted.write_failed;
    if (!trace.empty() && !place_trace(trace_dir, trace, log, cli.opts.overwrite, error)) {
      std::cerr << "asynccheck: ERROR: " << report::printable(error) << "\n";
      write_failed = true;
    }
    const int code = exit_code_for(emitted, cli);
    // Monitoring off in one process outweighs findings in another: part of the program went unchecked.
    if (code >= 0 && override_code != report::kMonitoringOffExitCode) override_code = code;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (trace_dir != dir) fs::remove_all(trace_dir, ec);  // the traces of processes not reported, or not put in place
  if (recordings.empty() && cli.opts.require_monitoring && WIFEXITED(status)) {
    // No process left a recording: the library never ran in the program (a static binary, secure execution). A
    // program killed by a signal ends by it below, as always.
    std::cerr << "asynccheck: ERROR: no process of the program was monitored (the library was not loaded: a "
                 "statically linked program, or a setuid one); exit code "
              << report::kMonitoringOffExitCode << " (--require-monitoring)\n";
    return report::kMonitoringOffExitCode;
  }
  if (override_code >= 0) return override_code;
  if (WIFSIGNALED(status)) {
    // End the way the program ended, so that a shell or CI runner sees the same signal.
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    struct rlimit no_core {
      0, 0
    };
    setrlimit(RLIMIT_CORE, &no_core);  // the program already dumped its core if it was going to
    kill(getpid(), sig);
    return 128 + sig;
  }
  const int program_code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  // A report asked for and not written: a success would hide it (the error line was printed).
  return program_code == 0 && write_failed ? report::kWriteFailedExitCode : program_code;
}

}  // namespace asynccheck::cli
