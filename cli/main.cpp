// The asynccheck command:
//   asynccheck [options] -- ./app args...   run the program with the library attached, report at its exit
//   asynccheck analyze RECORDING [options]   analyze a recording offline (no GPU needed)
//   asynccheck --list-rules[=markdown]       the documented rules asynccheck knows
// Options: every library option as --name=value (see --help), plus --error-exitcode N and --fail-on LEVEL.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/compact.h"
#include "analysis/recording.h"
#include "options/options.h"
#include "report/report.h"
#include "rules/catalog.h"
#include "rules/rules_markdown.h"

namespace fs = std::filesystem;
using namespace asynccheck;

namespace {

constexpr int kUsageError = 2;

int usage_error(const std::string& msg) {
  std::cerr << "asynccheck: ERROR: " << msg << "\n(run 'asynccheck --help' for usage)\n";
  return kUsageError;
}

void print_help() {
  std::cout << "usage: asynccheck [options] -- PROGRAM [ARGS...]   run PROGRAM with asynccheck attached\n"
               "       asynccheck analyze RECORDING [options]     analyze a run saved with --save (also: --read=FILE)\n"
               "       asynccheck --list-rules[=markdown]         the documented rules asynccheck knows\n\n"
               "  --error-exitcode=N   exit with N when findings at or above --fail-on exist that are not in the\n"
               "                       --baseline (default: exit with the program's own code)\n"
               "  --fail-on=LEVEL      note, warning or error (default warning)\n"
               "  --read=FILE          same as 'analyze FILE'\n\n"
            << options_help();
}

struct Cli {
  Options opts;
  std::vector<std::string> given;  // options named on the command line
  int error_exitcode = -1;
  rules::Level fail_on = rules::Level::Warning;
  std::string read;
  bool was_given(std::string_view name) const { return std::find(given.begin(), given.end(), name) != given.end(); }
};

// Parses "--name=value" / "--name value" options up to "--" or the first non-option.
bool parse_cli(std::vector<std::string>& args, size_t& i, Cli& cli, std::string& error) {
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") { ++i; return true; }
    if (a.rfind("--", 0) != 0) return true;
    a = a.substr(2);
    std::string name = a, value;
    size_t eq = a.find('=');
    if (eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      value = args[++i];
    } else {
      error = "option '--" + name + "' needs a value";
      return false;
    }
    const std::string raw_name = name;
    for (char& c : name) if (c == '-') c = '_';
    if (name == "error_exitcode") {
      char* end = nullptr;
      long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || v < 0 || v > 255) {
        error = "--error-exitcode: '" + value + "' is not an exit code (valid: 0 to 255)";
        return false;
      }
      cli.error_exitcode = static_cast<int>(v);
    } else if (name == "fail_on") {
      auto l = rules::parse_level(value);
      if (!l || *l == rules::Level::None) {
        error = "--fail-on: '" + value + "' is not a level (valid: note, warning, error)";
        return false;
      }
      cli.fail_on = *l;
    } else if (name == "read") {
      cli.read = value;
    } else if (!set_option(name, value, cli.opts, error)) {
      // The library's message names the option and what is valid; only the command's own options are added.
      if (error.rfind("unknown option", 0) == 0) {
        error = "unknown option '--" + raw_name + "' (valid: error-exitcode, fail-on, read, " + error.substr(error.find("(valid: ") + 8);
      }
      return false;
    }
    cli.given.push_back(name);
  }
  return true;
}

// Reports one run (live or recorded); the exit code the command should return instead of the program's, or -1.
int report_log(EventLog& log, const Cli& cli, const report::ReportInputs& inputs) {
  const report::Emitted e = report::emit(log, cli.opts, inputs);
  if (cli.error_exitcode >= 0 && e.worst_new != rules::Level::None && e.worst_new >= cli.fail_on) return cli.error_exitcode;
  return -1;
}

bool read_log(const std::string& path, EventLog& log, std::string& error) {
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
    // Compaction decided what to keep by judging the calls at the run's threshold, and dropped what a trace draws.
    if (cli.was_given("threshold") && cli.opts.threshold != log.run.threshold_ns) {
      return usage_error("recording '" + path + "' was compacted as it was captured, for threshold=" +
                         std::to_string(log.run.threshold_ns) + "ns; it can only be analyzed at that threshold "
                         "(record with --compact=0 to analyze at another)");
    }
    OutputFiles files;
    output_files(cli.opts, files, error);
    if (!files.trace.empty()) {
      return usage_error("recording '" + path + "' was compacted as it was captured and lacks the events a trace "
                         "draws (record with --compact=0, or ask for the trace in the run: asynccheck --trace=FILE -- ...)");
    }
  }
  if (cli.was_given("threshold") || !log.run.threshold_ns) log.run.threshold_ns = cli.opts.threshold;
  report::ReportInputs inputs;
  if (!report::prepare_report(cli.opts, log.run.pid, inputs, error)) return usage_error(error);
  const int code = report_log(log, cli, inputs);
  return code >= 0 ? code : 0;
}

// The library's options for the program under test: it only captures and saves its events; the command reports.
// Compaction (bounded memory) unless the command is to draw a trace, which needs every event.
std::string child_options(const Options& o, const std::string& recording) {
  OutputFiles files;
  std::string error;
  output_files(o, files, error);
  std::ostringstream s;
  s << "threshold=" << o.threshold << "ns:activity_buffer_kb=" << o.activity_buffer_kb
    << ":signal_timeout=" << o.signal_timeout << ":compact=" << (o.compact && files.trace.empty())
    << ":stats=" << o.stats << ":summary=0:symbolize=0:save=" << recording;
  return s.str();
}

fs::path library_path(const char* argv0) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  fs::path self = n > 0 ? fs::path(std::string(buf, static_cast<size_t>(n))) : fs::path(argv0);
  for (fs::path p : {self.parent_path() / "libasynccheck.so", self.parent_path().parent_path() / "lib" / "libasynccheck.so"}) {
    if (fs::exists(p)) return p;
  }
  return {};
}

int run_command(std::vector<std::string>& args, Cli& cli, const char* argv0) {
  size_t i = 1;
  std::string error;
  if (!parse_cli(args, i, cli, error) || !check_options(cli.opts, error)) return usage_error(error);
  if (!cli.read.empty()) {
    if (i < args.size()) return usage_error("--read analyzes a recording: no program may follow it (got '" + args[i] + "')");
    return analyze_command(cli.read, cli);
  }
  if (i >= args.size()) return usage_error("no program to run (usage: asynccheck [options] -- PROGRAM [ARGS...])");
  report::ReportInputs inputs;
  if (!report::prepare_report(cli.opts, static_cast<int>(getpid()), inputs, error)) return usage_error(error);
  const fs::path lib = library_path(argv0);
  if (lib.empty()) return usage_error("libasynccheck.so not found next to the asynccheck command or in ../lib");
  char tmpl[] = "/tmp/asynccheck.XXXXXX";
  if (!mkdtemp(tmpl)) return usage_error(std::string("cannot create a temporary directory: ") + std::strerror(errno));
  const std::string dir = tmpl;
  pid_t pid = fork();
  if (pid == 0) {
    const char* old = getenv("LD_PRELOAD");
    std::string preload = lib.string() + (old && *old ? std::string(":") + old : "");
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("ASYNCCHECK_OPTIONS", child_options(cli.opts, dir + "/run.%p.rec").c_str(), 1);
    std::vector<char*> argv;
    for (size_t k = i; k < args.size(); ++k) argv.push_back(args[k].data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::cerr << "asynccheck: ERROR: cannot run '" << args[i] << "': " << std::strerror(errno) << "\n";
    _exit(127);
  }
  // The program gets the terminal's signals itself (same process group); the command waits for it.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int override_code = -1;
  std::vector<fs::path> recordings;
  for (const auto& entry : fs::directory_iterator(dir)) recordings.push_back(entry.path());
  std::sort(recordings.begin(), recordings.end());  // one report per process, in pid order
  for (const fs::path& path : recordings) {
    EventLog log;
    if (!read_log(path, log, error)) {
      std::cerr << "asynccheck: ERROR: " << error << "\n";
      continue;
    }
    const int code = report_log(log, cli, inputs);
    if (code >= 0) override_code = code;
  }
  fs::remove_all(dir);
  if (override_code >= 0) return override_code;
  if (WIFSIGNALED(status)) {
    // End the way the program ended, so that a shell or CI runner sees the same signal.
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    struct rlimit no_core {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // the program already dumped its core if it was going to
    kill(getpid(), sig);
    return 128 + sig;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  Cli cli;
  if (args.size() < 2) return usage_error("no program to run (usage: asynccheck [options] -- PROGRAM [ARGS...])");
  if (args[1] == "--help" || args[1] == "-h") {
    print_help();
    return 0;
  }
  if (args[1] == "--list-rules" || args[1] == "--list-rules=text") {
    for (const rules::Rule& r : rules::all_rules()) {
      std::cout << r.id << "\t" << rules::level_name(r.level) << "\t" << r.title << "\n";
    }
    return 0;
  }
  if (args[1] == "--list-rules=markdown") {
    std::cout << rules::rules_markdown();
    return 0;
  }
  if (args[1] == "analyze") {
    if (args.size() < 3) return usage_error("analyze needs a recording file (usage: asynccheck analyze RECORDING [options])");
    size_t i = 3;
    std::string error;
    if (!parse_cli(args, i, cli, error) || !check_options(cli.opts, error)) return usage_error(error);
    if (i < args.size()) return usage_error("unexpected argument '" + args[i] + "' after the recording");
    return analyze_command(args[2], cli);
  }
  return run_command(args, cli, argv[0]);
}
