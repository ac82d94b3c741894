// The asynccheck command:
//   asynccheck [options] -- ./app args...   run the program with the library attached, report at its exit
//   asynccheck analyze RECORDING [options]   analyze a recording offline (no GPU needed)
//   asynccheck --list-rules[=markdown]       the documented rules asynccheck knows
// Options: every library option as --name=value (see --help), plus --error-exitcode N and --fail-on LEVEL.
#include <sys/wait.h>
#include <unistd.h>

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
  std::cout << "usage: asynccheck [options] -- PROGRAM [ARGS...]\n"
               "       asynccheck analyze RECORDING [options]\n"
               "       asynccheck --list-rules[=markdown]\n\n"
               "  --error-exitcode=N   exit with N when findings at or above --fail-on exist (default: the program's code)\n"
               "  --fail-on=LEVEL      note, warning or error (default warning)\n"
            << options_help();
}

struct Cli {
  Options opts;
  int error_exitcode = -1;
  rules::Level fail_on = rules::Level::Warning;
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
    } else if (!set_option(name, value, cli.opts, error)) {
      return false;
    }
  }
  return true;
}

std::string options_env(const Options& o) {
  std::ostringstream s;
  s << "threshold_us=" << o.threshold_us << ":print_limit=" << o.print_limit << ":activity_buffer_kb=" << o.activity_buffer_kb;
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

// Reports one run (live or recorded) and returns whether it has findings at or above the fail level.
bool report_log(EventLog& log, const Cli& cli) {
  if (cli.opts.symbolize) report::resolve_symbols(log);  // no-op for addresses the recording resolved
  AnalysisOptions ao;
  ao.threshold_ns = cli.opts.threshold_us * 1000;
  Analysis a = analyze(log, ao);
  auto sites = report::call_sites(log, report::kernel_names(log));
  auto rows = report::aggregate(log, a, sites);
  std::string error;
  if (!cli.opts.json.empty()) {
    std::ostringstream js;
    report::write_json(js, log, a, rows);
    if (!report::write_file(expand_path(cli.opts.json, log.run.pid), js.str(), error)) {
      std::cerr << "asynccheck: ERROR: " << error << "\n";
    }
  }
  std::ostringstream summary;
  report::write_summary(summary, log, a, rows, cli.opts.print_limit);
  if (cli.opts.log_path == "stdout") std::cout << summary.str();
  else std::cerr << summary.str();
  for (const auto& r : rows) if (r.level >= cli.fail_on) return true;
  return false;
}

bool save_recording(const std::string& path, const EventLog& log) {
  std::ostringstream rec;
  write_recording(rec, log);
  std::string error;
  if (report::write_file(path, rec.str(), error)) return true;
  std::cerr << "asynccheck: ERROR: " << error << "\n";
  return false;
}

int analyze_command(std::vector<std::string>& args, Cli& cli) {
  size_t i = 2;
  std::string error;
  if (args.size() < 3) return usage_error("analyze needs a recording file");
  std::string path = args[2];
  i = 3;
  if (!parse_cli(args, i, cli, error)) return usage_error(error);
  if (i < args.size()) return usage_error("unexpected argument '" + args[i] + "'");
  std::ifstream in(path);
  if (!in) return usage_error("cannot read recording '" + path + "': " + std::strerror(errno));
  EventLog log;
  if (!read_recording(in, log, error)) return usage_error("recording '" + path + "': " + error);
  if (cli.opts.threshold_us == Options{}.threshold_us && log.run.threshold_ns) cli.opts.threshold_us = log.run.threshold_ns / 1000;
  const bool failed = report_log(log, cli);
  // Re-save, with the call sites resolved while the binaries are at hand.
  if (!cli.opts.record.empty() && !save_recording(cli.opts.record, log)) return kUsageError;
  return failed && cli.error_exitcode >= 0 ? cli.error_exitcode : 0;
}

int run_command(std::vector<std::string>& args, Cli& cli, const char* argv0) {
  size_t i = 1;
  std::string error;
  if (!parse_cli(args, i, cli, error)) return usage_error(error);
  if (i >= args.size()) return usage_error("no program to run (usage: asynccheck [options] -- PROGRAM [ARGS...])");
  const fs::path lib = library_path(argv0);
  if (lib.empty()) return usage_error("libasynccheck.so not found next to the asynccheck command or in ../lib");
  char tmpl[] = "/tmp/asynccheck.XXXXXX";
  if (!mkdtemp(tmpl)) return usage_error(std::string("cannot create a temporary directory: ") + std::strerror(errno));
  const std::string dir = tmpl;
  const std::string rec = dir + "/run.%p.rec";
  std::string env = options_env(cli.opts) + ":summary=0:record=" + rec;
  pid_t pid = fork();
  if (pid == 0) {
    const char* old = getenv("LD_PRELOAD");
    std::string preload = lib.string() + (old && *old ? std::string(":") + old : "");
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("ASYNCCHECK_OPTIONS", env.c_str(), 1);
    std::vector<char*> argv;
    for (size_t k = i; k < args.size(); ++k) argv.push_back(args[k].data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::cerr << "asynccheck: ERROR: cannot run '" << args[i] << "': " << std::strerror(errno) << "\n";
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  bool failed = false;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    EventLog log;
    if (!read_recording(in, log, error)) {
      std::cerr << "asynccheck: ERROR: " << entry.path() << ": " << error << "\n";
      continue;
    }
    failed = report_log(log, cli) || failed;
    // Saved with its resolved call sites, so it replays anywhere.
    if (!cli.opts.record.empty()) save_recording(expand_path(cli.opts.record, log.run.pid), log);
  }
  fs::remove_all(dir);
  return failed && cli.error_exitcode >= 0 ? cli.error_exitcode : code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  Cli cli;
  if (args.size() < 2) return usage_error("nothing to do");
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
  if (args[1] == "analyze") return analyze_command(args, cli);
  return run_command(args, cli, argv[0]);
}
