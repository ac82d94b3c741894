#include "interpose/core.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "analysis/analyze.h"
#include "analysis/recording.h"
#include "interpose/capture.h"
#include "options/options.h"
#include "report/report.h"

namespace asynccheck::core {
namespace {

std::atomic<bool> g_started{false};
std::atomic<bool> g_finished{false};
bool g_capturing = false;
Options* g_options = nullptr;  // leaked on purpose: used during exit
RunInfo* g_run = nullptr;
report::ReportInputs* g_inputs = nullptr;

void say(const std::string& line) {
  std::string out = "asynccheck: " + line + "\n";
  ssize_t ignored = write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

// The program's own name and arguments, from /proc (no access to main's argv from a constructor).
void read_command_line(RunInfo& run) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  bool first = true;
  while (std::getline(in, arg, '\0')) {
    if (first) run.program = arg;
    else run.args.push_back(arg);
    first = false;
  }
}

rules::Environment read_environment() {
  rules::Environment env;
  if (const char* v = std::getenv("CUDA_MODULE_LOADING")) {
    std::string s = v;
    if (s == "EAGER") env.module_loading = rules::ModuleLoading::Eager;
    else if (s == "LAZY") env.module_loading = rules::ModuleLoading::Lazy;
  }
  if (const char* v = std::getenv("CUDA_LAUNCH_BLOCKING")) env.launch_blocking = std::string(v) == "1";
  return env;
}

void finish() {
  if (g_finished.exchange(true)) return;
  EventLog log = g_capturing ? capture::finish() : EventLog{};
  RunInfo info = *g_run;
  info.gpu = log.run.gpu;
  info.dropped_records = log.run.dropped_records;
  info.threshold_ns = g_options->threshold;
  log.run = info;
  report::emit(log, *g_options, *g_inputs);
}

}  // namespace

void start(Origin) {
  if (g_started.exchange(true)) return;  // both shims of the same library: one core
  g_options = new Options;
  g_run = new RunInfo;
  g_inputs = new report::ReportInputs;
  read_command_line(*g_run);
  g_run->pid = static_cast<int>(getpid());
  g_run->env = read_environment();
  // Under secure execution (setuid/setgid) the environment is not ours to trust: ignore its options.
  const char* env = secure_getenv("ASYNCCHECK_OPTIONS");
  std::string error;
  // A bad option or input file: nothing is watched, the program runs unchanged, and the report (with the
  // options that did parse) says why.
  auto monitoring_off = [](const std::string& why) {
    say("ERROR: " + why + "; monitoring is off, the program runs unchanged");
    g_run->monitoring = "off: " + why;
    std::atexit(finish);
  };
  if (env && !parse_options(env, *g_options, error)) return monitoring_off("ASYNCCHECK_OPTIONS: " + error);
  if (g_options->help) say(options_help());
  if (!report::prepare_report(*g_options, g_run->pid, *g_inputs, error)) return monitoring_off(error);
  // Exit handlers run in reverse order of registration. The one registered at the first watched call runs
  // before the CUDA runtime's own teardown (registered during that call); the one registered now is the fallback
  // for a program that never finishes a watched call. finish() runs once.
  if (!capture::start(g_options->threshold, g_options->activity_buffer_kb * 1024,
                      [] { std::atexit(finish); }, error)) {
    say("monitoring off: " + error + "; the program runs unchanged");
    g_run->monitoring = "off: " + error;
    std::atexit(finish);  // the report still says that nothing was watched, and why
    return;
  }
  g_capturing = true;
  std::atexit(finish);
}

}  // namespace asynccheck::core
