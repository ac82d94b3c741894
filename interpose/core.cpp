#include "interpose/core.h"

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "analysis/analyze.h"
#include "analysis/event_memory.h"
#include "analysis/monitoring.h"
#include "analysis/recording.h"
#include "common/signals_blocked.h"
#include "cupti/activity.h"
#include "cupti/subscriber.h"
#include "interpose/capture.h"
#include "interpose/lineage.h"
#include "interpose/modules.h"
#include "interpose/nvtx_ranges.h"
#include "interpose/stacks.h"
#include "options/options.h"
#include "report/exit_code.h"
#include "report/plural.h"
#include "report/recording_stream.h"
#include "report/report.h"
#include "report/symbolize.h"
#include "report/trace_stream.h"

namespace asynccheck::core {
namespace {

std::atomic<bool> g_started{false};
bool g_capturing = false;
// Started by a process that has asynccheck too (lineage.h): then this one reports only if it used CUDA.
bool g_descendant = false;
bool g_said_off = false;       // the start said monitoring is off, on stderr
Options* g_options = nullptr;  // leaked on purpose: used during exit
RunInfo* g_run = nullptr;
// The `save` recording, written as the run goes while the analysis streams; null otherwise (never destroyed).
report::RecordingStream* g_recording = nullptr;
// The `trace`, drawn as the analysis lets the events go while it streams; null otherwise (never destroyed).
report::TraceStream* g_trace = nullptr;
report::ReportInputs* g_inputs = nullptr;
// The code the options ask the process to end with once its report is written (report/exit_code.h), or -1: the
// program's own. Atomic: read by the async-signal-safe ends (_exit, quick_exit).
std::atomic<int> g_exit_code{-1};
bool g_preloaded = false;  // started by LD_PRELOAD's constructor, before the program's own code (core.h Origin)
// start() armed the report (arm()): false before start and when another copy of the library reports for us.
std::atomic<bool> g_armed{false};

// Exactly one report per process: the first end to move the state from Idle to Writing writes it (an exit
// handler on its own thread, or the reporter thread for the ends below); every other end finds it Writing or
// Written. Lock-free, so signal handlers may use it.
enum State : int { kIdle, kWriting, kWritten };
std::atomic<int> g_state{kIdle};
// The process that started monitoring. A forked child shares our memory (all of it, under vfork) but not our
// pid: comparing pids keeps it from reporting, without writing anything in the child (fork, vfork and clone
// alike, whether or not pthread_atfork handlers run).
std::atomic<pid_t> g_owner{0};

// The ends that cannot write the report on their own thread (a signal handler may not allocate or lock; _exit
// may be called from one): they wake the reporter thread, started at start() since creating a thread is not
// async-signal-safe, and wait for its answer.
enum class EndKind : int { Exit, Signal, UnderscoreExit, UpperExit, QuickExit };
std::atomic<bool> g_reporter{false};  // the reporter thread is running
int g_ender_fd = -1;                  // the ending thread's end of the socket pair: sends 'r', waits for 'd'
int g_reporter_fd = -1;               // the reporter's end
struct stat g_ender_stat {};          // what g_ender_fd was, in case the program closed and reused the number
int g_timeout_ms = 10'000;
std::atomic<int> g_end_kind{0};
std::atomic<int> g_end_signal{0};
std::atomic<pid_t> g_writer_tid{0};  // the thread writing the report (reporter or exiting thread), while it does
// Where the fault being reported happened (RunInfo::fault): its instruction, and the address it was about unless the
// kernel gave none. Written by the thread whose signal the report is for, before it wakes the reporter; `known` last.
std::atomic<bool> g_fault_known{false}, g_fault_address_known{false};
std::atomic<uint64_t> g_fault_pc{0}, g_fault_address{0};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "a signal handler stores these");

bool is_fault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL; }

// Keeps where a fault raised by an instruction happened (si_code > 0: not one sent by kill, raise or sigqueue).
// Async-signal-safe. SI_KERNEL (x86-64's general-protection faults: a non-canonical pointer) comes without the
// address.
void note_fault(int sig, const siginfo_t* info, const void* context) {
  if (!is_fault(sig) || info == nullptr || info->si_code <= 0 || context == nullptr) return;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  g_fault_pc.store(static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]));
#elif defined(__aarch64__)
  g_fault_pc.store(static_cast<uint64_t>(uc->uc_mcontext.pc));
#else
  (void)uc;
  return;  // no instruction address known here
#endif
  g_fault_address.store(reinterpret_cast<uintptr_t>(info->si_addr));
  g_fault_address_known.store(info->si_code != SI_KERNEL);
  g_fault_known.store(true, std::memory_order_release);
}

// The signals whose default action ends the process, which we report on. SIGKILL and SIGSTOP cannot be caught.
constexpr int kSignals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGABRT, SIGSEGV, SIGBUS,  SIGFPE,
                            SIGILL,  SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ, SIGSYS};
struct sigaction g_previous[NSIG];  // the program's action before ours, for each signal we handle

bool reported_on(int sig) {
  for (int s : kSignals) {
    if (s == sig) return true;
  }
  return false;
}

bool is_owner() {
  const pid_t owner = g_owner.load(std::memory_order_acquire);
  return owner != 0 && getpid() == owner;
}

// For the async-signal-safe paths: a constant line, with write(2) only.
void say_safe(const char* line) {
  size_t n = 0;
  while (line[n] != '\0') ++n;
  ssize_t ignored = write(STDERR_FILENO, line, n);
  (void)ignored;
}

void say(const std::string& line) {
  // Newlines kept: the help text (help=1) is several lines; control characters are escaped all the same.
  std::string out = "asynccheck: " + report::printable(line, /*keep_newlines=*/true) + "\n";
  ssize_t ignored = write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

// The program's own name and arguments, from /proc (no access to main's argv from a constructor).
void read_command_line(RunInfo& run) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  bool first = true;
  while (std::getline(in, arg, '\0')) {
    if (first)
      run.program = arg;
    else
      run.args.push_back(arg);
    first = false;
  }
}

// The kernel driver's version ("580.159.04") from the file the NVIDIA driver publishes: no CUDA call needed. Its
// first line reads "NVRM version: NVIDIA UNIX [Open ]Kernel Module [for x86_64]  580.159.04  Release Build ...":
// the version is the first word made of digits and dots. Empty where there is no NVIDIA driver.
std::string read_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  std::istringstream words(line);
  for (std::string w; words >> w;) {
    if (w.find_first_not_of("0123456789.") == std::string::npos && w.find('.') != std::string::npos &&
        std::isdigit(static_cast<unsigned char>(w[0]))) {
      return w;
    }
  }
  return "";
}

// The path of this copy of the library, for messages that must tell two copies apart.
std::string library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_path), &info) == 0 || !info.dli_fname) return "?";
  return info.dli_fname;
}

rules::Environment read_environment() {
  rules::Environment env;
  if (const char* v = std::getenv("CUDA_MODULE_LOADING")) {
    std::string s = v;
    if (s == "EAGER")
      env.module_loading = rules::ModuleLoading::Eager;
    else if (s == "LAZY")
      env.module_loading = rules::ModuleLoading::Lazy;
  }
  if (const char* v = std::getenv("CUDA_LAUNCH_BLOCKING")) env.launch_blocking = std::string(v) == "1";
  return env;
}

std::string signal_name(int sig) {
  static const struct {
    int sig;
    const char* name;
  } kNames[] = {{SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGHUP, "SIGHUP"},   {SIGQUIT, "SIGQUIT"},
                {SIGABRT, "SIGABRT"}, {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
                {SIGILL, "SIGILL"},   {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGUSR1, "SIGUSR1"},
                {SIGUSR2, "SIGUSR2"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"}};
  for (const auto& n : kNames) {
    if (n.sig == sig) return n.name;
  }
  return std::to_string(sig);
}

std::string end_text(EndKind kind, int sig) {
  switch (kind) {
    case EndKind::Exit: return "exit";
    case EndKind::Signal: return "signal " + signal_name(sig);
    case EndKind::UnderscoreExit: return "_exit";
    case EndKind::UpperExit: return "_Exit";
    case EndKind::QuickExit: return "quick_exit";
  }
  return "exit";
}

// The process's peak resident memory in KiB (getrusage: async-signal-safe).
long peak_rss_kb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// The peak as the end began (emit_report, before capture::finish): the stats line tells the run's peak from the
// end's, whose flush and last chunks can make their own.
long g_peak_rss_kb_at_end = 0;

// The `stats` option's line: how the streaming analysis kept up (capture.h Stats) and the process's peak memory.
std::string stats_line(const EventLog& log) {
  const capture::Stats st = capture::stats();
  std::ostringstream o;
  using report::counted;
  const event_memory::Stats em = event_memory::stats();
  o << "stats: " << counted(log.calls.size(), "call") << " and " << counted(log.ops.size(), "GPU operation")
    << " kept for the report, " << counted(log.carried.calls, "call") << " and "
    << counted(log.carried.ops, "operation") << " judged and let go; " << counted(st.rounds, "round") << " ("
    << capture::forced_flushes() << " with a forced flush, " << capture::ordinary_flushes()
    << " with an ordinary one, at most " << static_cast<double>(st.longest_round_gap_ns) / 1e6 << " ms apart), "
    << counted(st.chunks, "chunk") << " (largest " << counted(st.largest_chunk, "call") << ", longest "
    << static_cast<double>(st.longest_chunk_ns) / 1e6 << " ms, " << static_cast<double>(st.compact_ns) / 1e6
    << " ms in all; rounds besides: " << static_cast<double>(st.flush_ns) / 1e6 << " ms flushing CUPTI, "
    << static_cast<double>(st.take_ns) / 1e6 << " ms taking the threads' calls, "
    << static_cast<double>(st.add_ns) / 1e6 << " ms adding them), backlog peak " << counted(st.peak_backlog, "call")
    << ", window peak " << counted(st.peak_window_calls, "call") << " and " << counted(st.peak_window_ops, "operation")
    << ", " << counted(st.shed_calls, "call") << " shed at the compact_backlog limit (" << st.lost_calls
    << " of them not ordinary: lost); " << counted(st.late_ops, "activity record") << " a round late (ended up to "
    << static_cast<double>(st.latest_late_ns) / 1e6 << " ms before the flush that missed them); "
    << counted(st.awaited_records, "call") << " waiting for their work's record at the last round, "
    << counted(st.overdue_records, "record") << " given up on (10 s overdue); "
    << counted(capture::stacks_walked(), "call stack") << " walked; "
    << counted(cupti::untimed_records(), "GPU operation") << " untimed; event memory "
    << em.mapped_bytes / (1024 * 1024) << " MiB mapped (" << em.cached_bytes / (1024 * 1024) << " MiB cached, at most "
    << em.peak_mapped_bytes / (1024 * 1024) << " MiB mapped at once), " << em.maps << " mappings made, " << em.reuses
    << " reused; peak RSS of the process " << peak_rss_kb() / 1024 << " MiB (" << g_peak_rss_kb_at_end / 1024
    << " MiB as the end began)";
  return o.str();
}

// The tail of the `save` recording written as the run went: the tables and symbols of the whole run, and what was
// counted without being kept (calls shed, their work).
void finish_recording(EventLog& log) {
  if (g_options->symbolize && log.symbols.empty()) report::symbolize_within_limit(log);
  EventLog tail;
  copy_run_and_tables(log, tail);
  tail.carried.calls = log.run.unanalyzed_calls;
  tail.carried.ops = capture::stats().dropped_ops;
  std::string error, warning;
  if (!g_recording->close(tail, error, warning)) say("ERROR: " + error);
  if (!warning.empty()) say("WARNING: " + warning);
}

// What emit_report did: asynccheck_report_now (report_now.cpp) tells its caller.
enum class Wrote { Report, Nothing, Failed };

// The report itself (not async-signal-safe): on the exiting thread at exit, on the reporter thread otherwise.
Wrote emit_report(EndKind kind, int sig) {
  g_peak_rss_kb_at_end = peak_rss_kb();
  StreamingAnalysis::Result result = g_capturing ? capture::finish() : StreamingAnalysis::Result{};
  EventLog& log = result.log;
  // A helper process: nothing to say (lineage.h).
  if (g_capturing && g_descendant && !used_cuda(log)) return Wrote::Nothing;
  // Monitoring off: a helper process that never loaded the CUDA driver has nothing to say either.
  if (!g_capturing && g_descendant && !lineage::cuda_driver_loaded()) return Wrote::Nothing;
  if (g_capturing) {
    log.nvtx_ranges = nvtx_ranges::names();  // after finish(): every id a call holds is named
    // Unless the table could not be read in time (a thread stopped by a signal holds it): ids it does not name
    // would not read back from the hand-off.
    const size_t named = log.nvtx_ranges.size();
    for (ApiCall& c : log.calls) c.nvtx_range = c.nvtx_range > named ? 0 : c.nvtx_range;
    for (CarriedSite& s : log.carried.findings) s.nvtx_range = s.nvtx_range > named ? 0 : s.nvtx_range;
  }
  RunInfo info = *g_run;
  // Started, then stopped before the end (capture::finish): every report and recording keeps it, and the summary
  // (the library's, or the command's from the recording) says it.
  if (monitoring_stopped(log.run.monitoring)) info.monitoring = log.run.monitoring;
  info.gpu = log.run.gpu;
  info.dropped_records = log.run.dropped_records;
  info.unanalyzed_calls = log.run.unanalyzed_calls;
  info.threshold_ns = g_options->threshold;
  info.cost_threshold_ns = g_options->cost_threshold;
  info.capture_range = g_options->capture_range;
  info.end = end_text(kind, sig);
  // Where the process faulted, among the modules the report names: those the capture listed, else (monitoring off:
  // it listed none) read from /proc/self/maps, not with dl_iterate_phdr, whose lock the faulting thread may hold.
  if (kind == EndKind::Signal && g_fault_known.load(std::memory_order_acquire)) {
    std::optional<uint64_t> address;
    if (g_fault_address_known.load()) address = g_fault_address.load();
    info.fault = report::fault_place(g_fault_pc.load(), address, log.modules.empty() ? mapped_modules() : log.modules);
  }
  // Only an exit runs to the end: any other end stops the program where it was. An exit while another thread was
  // inside a CUDA call is incomplete too (capture::finish).
  info.complete = kind == EndKind::Exit && log.run.complete;
  log.run = info;
  // Findings were made with the run's own thresholds: the report's options are the same. A recording written as
  // the run went is finished here, not written again from what the analysis kept.
  Options report_options = *g_options;
  if (g_recording) report_options.save.clear();
  // Monitoring was off and the start said so on stderr: the summary would only say it again (JSON and SARIF still
  // record it).
  if (g_said_off && (g_options->log_file.empty() || g_options->log_file == "stderr")) report_options.summary = false;
  const report::Emitted emitted =
      report::emit(log, g_capturing ? &result.analysis : nullptr, report_options, *g_inputs);
  // The exit code the options ask for (require_monitoring, error_exitcode), applied as the process ends
  // (apply_exit_code). Under the asynccheck command (a hand-off) the command decides it from every process's report.
  const int code = g_options->handoff.empty() ? report::requested_exit_code(*g_options, emitted) : -1;
  if (code >= 0 && !g_preloaded) {
    // Loaded by CUDA_INJECTION64_PATH at cuInit, after the program registered its own exit handlers: ending the
    // process from ours would skip them, and the _exit shim is not in place. The program's code stands.
    say("WARNING: exit code " + std::to_string(code) +
        " not applied: error_exitcode and require_monitoring take effect under LD_PRELOAD or the asynccheck command, "
        "not CUDA_INJECTION64_PATH; the program's own exit code stands");
  } else if (code >= 0) {
    g_exit_code.store(code);
  }
  bool failed = emitted.write_failed;
  if (g_recording) finish_recording(log);
  if (!g_options->handoff.empty()) {  // the asynccheck command reports from this
    std::ostringstream rec;
    write_recording(rec, log);
    std::string error;
    if (!report::write_file(expand_path(g_options->handoff, log.run.pid, log.run.rank), rec.str(), g_options->overwrite,
                            error)) {
      say("ERROR: " + error);
      failed = true;
    }
  }
  if (g_options->stats) say(stats_line(log));
  if (const uint64_t untimed = g_capturing ? cupti::untimed_records() : 0) {
    // Mostly CUPTI's device buffers running out (many threads launching for long: cupti/activity.cpp); a few came
    // untimed in runs that never reached the limit, so the line names the option without blaming it.
    say("WARNING: " + report::counted(untimed, "GPU operation") +
        " came from CUPTI without timestamps: evidence that involves " + (untimed == 1 ? "it" : "them") +
        " is incomplete (device_buffers=" + std::to_string(g_options->device_buffers) +
        ", device_buffer_kb=" + std::to_string(g_options->device_buffer_kb) + "; docs/robustness.md)");
  }
  if (const cupti::FailedCallbacks f = g_capturing ? cupti::failed_callbacks() : cupti::FailedCallbacks{}; f.any()) {
    // An exception of ours (an allocation out of memory, for one) caught where CUPTI called us: cupti/subscriber.cpp.
    std::string on;
    if (f.calls != 0) on = report::counted(f.calls, "CUDA call");
    if (f.others != 0) on += (on.empty() ? "" : " and ") + report::counted(f.others, "NVTX or resource callback");
    say("WARNING: asynccheck's callback failed on " + on +
        ": what they were about is missing from the report, which is incomplete");
  }
  return failed ? Wrote::Failed : Wrote::Report;
}

Wrote write_report(EndKind kind, int sig) {
  // Writing the summary to a closed pipe (`app 2>&1 | head`) must not kill the program with SIGPIPE at its exit:
  // the write fails with EPIPE instead, and a SIGPIPE of our own making is taken back before the mask is restored.
  sigset_t pipe_only, old_mask, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
  sigpending(&pending);
  const bool pipe_was_pending = sigismember(&pending, SIGPIPE) == 1;

  const Wrote wrote = emit_report(kind, sig);

  sigpending(&pending);
  if (!pipe_was_pending && sigismember(&pending, SIGPIPE) == 1 && sigismember(&old_mask, SIGPIPE) != 1) {
    const timespec zero{};
    sigtimedwait(&pipe_only, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return wrote;
}

// The exit handler (registered at start and again at the first watched call, so that it runs before the CUDA
// runtime's own teardown). Runs on the thread that called exit(), which may not be the main thread while others
// still make CUDA calls: capture::finish is safe then.
void report_at_exit() {
  if (!is_owner()) return;  // a forked child that did not exec: its parent reports
  int idle = kIdle;
  if (!g_state.compare_exchange_strong(idle, kWriting)) return;
  g_writer_tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
  write_report(EndKind::Exit, 0);
  g_state.store(kWritten);
}

void* reporter_main(void*) {
  for (;;) {
    char byte = 0;
    const ssize_t n = recv(g_reporter_fd, &byte, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return nullptr;  // the program closed our socket: the ending thread will not get an answer
    g_writer_tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    write_report(static_cast<EndKind>(g_end_kind.load()), g_end_signal.load());
    g_state.store(kWritten);
    const char done = 'd';
    while (send(g_reporter_fd, &done, 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {}
  }
}

int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

enum class Asked {
  Written,      // the reporter wrote the report
  TimedOut,     // it did not answer within signal_timeout (or could not be reached)
  NotOurs,      // not the process that started monitoring, or no reporter
  AlreadyDone,  // a report was written before
  Busy,         // a report is being written right now (a second signal, maybe the reporter's own crash)
};

Asked wait_for_reporter(EndKind kind, int sig, const siginfo_t* info, const void* context);

// Asks the reporter thread for the report and waits for it. Async-signal-safe: atomics, getpid, fstat, send,
// poll, recv, clock_gettime and write only.
// `info` and `context`: a signal's, whose fault (if it is one) the report says where (note_fault).
Asked ask_for_report(EndKind kind, int sig, const siginfo_t* info = nullptr, const void* context = nullptr) {
  const Asked asked = wait_for_reporter(kind, sig, info, context);
  if (asked == Asked::TimedOut) {
    say_safe("asynccheck: ERROR: the report was not written within signal_timeout; the program ends without it\n");
  }
  return asked;
}

Asked wait_for_reporter(EndKind kind, int sig, const siginfo_t* info, const void* context) {
  if (!g_reporter.load(std::memory_order_acquire) || !is_owner()) return Asked::NotOurs;
  int idle = kIdle;
  if (!g_state.compare_exchange_strong(idle, kWriting)) return idle == kWriting ? Asked::Busy : Asked::AlreadyDone;
  g_end_kind.store(static_cast<int>(kind));
  g_end_signal.store(sig);
  // Only the signal this report is for, in the process that reports (a vfork child shares our memory): not a fault
  // of another thread, nor one the report's own writer makes.
  note_fault(sig, info, context);
  // The program may have closed every descriptor it did not open (daemons do) and reused the number: then it is
  // not our socket, and nothing is sent.
  struct stat now {};
  if (fstat(g_ender_fd, &now) != 0 || now.st_ino != g_ender_stat.st_ino || now.st_dev != g_ender_stat.st_dev) {
    return Asked::TimedOut;
  }
  const char wake = 'r';
  ssize_t sent;
  while ((sent = send(g_ender_fd, &wake, 1, MSG_NOSIGNAL)) < 0 && errno == EINTR) {}
  if (sent != 1) return Asked::TimedOut;
  const int64_t deadline = now_ms() + g_timeout_ms;
  for (;;) {
    const int64_t left = deadline - now_ms();
    if (left <= 0) return Asked::TimedOut;
    pollfd p{g_ender_fd, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Asked::TimedOut;
    char done = 0;
    return recv(g_ender_fd, &done, 1, MSG_DONTWAIT) == 1 ? Asked::Written : Asked::TimedOut;
  }
}

// Ends the process by `sig` under its default action, as it would have ended without us (core dump included).
void die_by_default(int sig, const siginfo_t* info) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  // A fault raised by an instruction: returning runs it again, and it faults under the default action, so the
  // core shows the program's own state and the kernel's own siginfo.
  if (is_fault(sig) && info != nullptr && info->si_code > 0) return;
  // Otherwise send it again: it stays pending while its handler runs (it is blocked), and is delivered, ending the
  // process, as soon as it is unblocked. tgkill rather than raise(): the shim interposes raise.
  syscall(SYS_tgkill, static_cast<long>(getpid()), static_cast<long>(syscall(SYS_gettid)), static_cast<long>(sig));
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
}

// The program hurt itself (a fault, or a signal it sent itself: abort(), raise()), as opposed to being told to end
// from outside (Ctrl-C, kill).
bool self_inflicted(int sig, const siginfo_t* info) {
  if (info == nullptr) return false;
  if (is_fault(sig) && info->si_code > 0) return true;
  return (info->si_code == SI_USER || info->si_code == SI_TKILL) && info->si_pid == getpid();
}

// Waits, at most signal_timeout, until the report being written is done. Async-signal-safe.
void wait_until_written() {
  const int64_t deadline = now_ms() + g_timeout_ms;
  while (g_state.load() != kWritten && now_ms() < deadline) poll(nullptr, 0, 10);
}

// Our handler: report (through the reporter thread), then do what the program's previous action would have done.
// Async-signal-safe: no allocation, no lock, no stdio.
void on_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (ask_for_report(EndKind::Signal, sig, info, context) == Asked::Busy) {
    // A second fatal signal while the report is written. The writing thread crashed (a corrupted heap), or the
    // user insists (a second Ctrl-C, kill): waiting could deadlock or is not wanted, end now. Another thread
    // crashing meanwhile waits for the report, bounded, and then ends as it would have.
    if (g_writer_tid.load() == static_cast<pid_t>(syscall(SYS_gettid)) || !self_inflicted(sig, info)) {
      die_by_default(sig, info);
      errno = saved_errno;
      return;
    }
    wait_until_written();
  }
  const struct sigaction& prev = g_previous[sig];
  const bool has_info = (prev.sa_flags & SA_SIGINFO) != 0;
  if (!has_info && prev.sa_handler == SIG_IGN) {  // only in the instant between reading and replacing it
    errno = saved_errno;
    return;
  }
  if (!has_info && prev.sa_handler == SIG_DFL) {
    die_by_default(sig, info);
    errno = saved_errno;
    return;
  }
  // The program's handler, as the kernel would have called it: our action was installed with its mask, SA_NODEFER
  // and SA_RESTART, so only SA_RESETHAND is left to honour (SA_ONSTACK is always ours: a stack overflow).
  if (prev.sa_flags & SA_RESETHAND) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
  }
  errno = saved_errno;
  if (has_info)
    prev.sa_sigaction(sig, info, context);
  else
    prev.sa_handler(sig);
}

void install_handlers() {
  for (int sig : kSignals) {
    struct sigaction prev {};
    if (sigaction(sig, nullptr, &prev) != 0) continue;
    // An ignored signal stays ignored: no report is due, and an exec'd child must inherit SIG_IGN (nohup).
    if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_IGN) continue;
    g_previous[sig] = prev;
    const bool program_handler = (prev.sa_flags & SA_SIGINFO) || prev.sa_handler != SIG_DFL;
    struct sigaction ours {};
    ours.sa_sigaction = on_signal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;  // on the thread's alternate stack if it has one (stack overflow)
    if (program_handler) {
      ours.sa_mask = prev.sa_mask;
      ours.sa_flags |= prev.sa_flags & (SA_RESTART | SA_NODEFER);
    } else {
      // Nothing blocked, the signal itself included: a second Ctrl-C (or any other fatal signal) while the
      // report is written interrupts the wait and ends the program at once, even in a single-threaded program.
      sigemptyset(&ours.sa_mask);
      ours.sa_flags |= SA_NODEFER;
    }
    // A handler the program installs later replaces ours, and wins: we never install again.
    sigaction(sig, &ours, nullptr);
  }
}

// For the ends the program chose (_exit, _Exit, quick_exit): if another thread is writing the report right now,
// wait for it (bounded) rather than cut it short.
void report_or_wait(EndKind kind) {
  if (ask_for_report(kind, 0) == Asked::Busy && g_writer_tid.load() != static_cast<pid_t>(syscall(SYS_gettid))) {
    wait_until_written();
  }
}

void at_quick_exit_handler() {
  report_or_wait(EndKind::QuickExit);
  // quick_exit flushes nothing and runs no other handler of ours: end now with the code asked for, if one was.
  const int code = g_exit_code.load();
  if (code >= 0 && is_owner()) syscall(SYS_exit_group, code);
}

// The exit handler that ends the process with the code the options ask for (error_exitcode, require_monitoring in
// raw LD_PRELOAD use). The library never calls exit(): exit() has already begun, with the program's status, and
// cannot be given another. Registered first, at start, it runs after the report is written and after every exit
// handler the program or the CUDA runtime registered later; what exit() would still do after it is flushing the
// program's buffered output, done here, before the process ends with the code asked for.
void apply_exit_code() {
  const int code = g_exit_code.load();
  if (code < 0 || !is_owner()) return;
  std::cout.flush();  // a program that left stdio for its own buffer (sync_with_stdio(false))
  std::clog.flush();
  std::fflush(nullptr);
  syscall(SYS_exit_group, code);
}

// The reporter thread and the ends it serves. Without it (signal_timeout=0, or it could not start) only exit
// reports.
void start_reporter() {
  if (g_options->signal_timeout == 0) return;
  g_timeout_ms = static_cast<int>(std::min<uint64_t>(g_options->signal_timeout, 86'400) * 1000);
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    say("cannot create the reporter's socket pair; no report on signals, _exit and quick_exit");
    return;
  }
  g_ender_fd = fds[0];
  g_reporter_fd = fds[1];
  fstat(g_ender_fd, &g_ender_stat);
  pthread_t thread;
  const int rc = with_signals_blocked([&] { return pthread_create(&thread, nullptr, reporter_main, nullptr); });
  if (rc != 0) {
    say("cannot start the reporter thread; no report on signals, _exit and quick_exit");
    close(fds[0]);
    close(fds[1]);
    return;
  }
  pthread_detach(thread);
  g_reporter.store(true, std::memory_order_release);
  install_handlers();
  at_quick_exit(at_quick_exit_handler);
}

// Whatever happens to the options, the program's end reports from here on.
void arm() {
  std::atexit(report_at_exit);
  start_reporter();
  g_armed.store(true, std::memory_order_release);
}

}  // namespace

void report_before(End end) {
  report_or_wait(end == End::UnderscoreExit ? EndKind::UnderscoreExit : EndKind::UpperExit);
}

int report_now() {
  // Not armed: start() has not run, or another copy of the library reports for this process. A forked child: its
  // parent reports.
  if (!g_armed.load(std::memory_order_acquire) || !is_owner()) return 1;
  int idle = kIdle;
  if (!g_state.compare_exchange_strong(idle, kWriting)) return 1;  // written, or being written by another end
  g_writer_tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
  const Wrote wrote = write_report(EndKind::Exit, 0);
  g_state.store(kWritten);  // every end from now on finds it written, the exit handler included
  if (wrote == Wrote::Failed) return 2;
  return g_capturing && wrote == Wrote::Report ? 0 : 1;
}

int exit_code(int program_code) {
  const int code = g_exit_code.load();
  return code >= 0 && is_owner() ? code : program_code;
}

void report_before_signal(int sig) {
  // Whether or not our handler was ever installed for it (the signal may have been ignored at start, as in a
  // background job, and the program set SIG_DFL since): the process is about to die by it.
  if (!reported_on(sig) || !g_reporter.load(std::memory_order_acquire) || !is_owner()) return;
  struct sigaction now {};
  if (sigaction(sig, nullptr, &now) != 0) return;
  if ((now.sa_flags & SA_SIGINFO) || now.sa_handler != SIG_DFL) return;  // a handler (ours or the program's) runs
  sigset_t blocked;
  if (pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0 || sigismember(&blocked, sig) == 1) return;  // stays pending
  ask_for_report(EndKind::Signal, sig);
}

void start(Origin origin) {
  if (g_started.exchange(true)) return;  // both shims of the same library: one core
  g_preloaded = origin == Origin::Preload;
  // Before any report handler is registered, so that it runs after all of them (exit handlers run in reverse), and
  // under LD_PRELOAD before the program's own code, so that it runs after every handler the program registers.
  if (g_preloaded) std::atexit(apply_exit_code);
  g_options = new Options;
  g_run = new RunInfo;
  g_inputs = new report::ReportInputs;
  read_command_line(*g_run);
  g_run->driver = read_driver_version();
  g_run->pid = static_cast<int>(getpid());
  const Rank rank = process_rank();  // names the report (%r) and says which rank it is
  g_run->rank = rank.value;
  g_run->rank_variable = rank.variable;
  g_owner.store(static_cast<pid_t>(g_run->pid), std::memory_order_release);
  g_descendant = lineage::process_has_library(getppid());
  g_run->env = read_environment();
  // Under secure execution (setuid/setgid, file capabilities) the environment is not ours to trust: its options
  // could make a privileged program write files where its caller chooses. Ignored, and said so.
  const char* env = secure_getenv("ASYNCCHECK_OPTIONS");
  if (env == nullptr && getauxval(AT_SECURE) != 0 && std::getenv("ASYNCCHECK_OPTIONS") != nullptr) {
    say("ASYNCCHECK_OPTIONS is ignored under secure execution (a setuid or setgid program, or one with file "
        "capabilities): the defaults apply");
  }
  std::string error;
  // A bad option or input file: nothing is watched, the program runs unchanged, and the report (with the
  // options that did parse) says why.
  auto monitoring_off = [](const std::string& why) {
    say("ERROR: " + why + "; monitoring is off, the program runs unchanged");
    g_run->monitoring = "off: " + why;
    arm();
  };
  if (env && !parse_options(env, *g_options, error)) {
    // A typo must not turn a CI job's require_monitoring (or error_exitcode) off with it: those of the items that
    // are valid on their own still hold.
    Options valid_items;
    parse_valid_items(env, valid_items);
    g_options->require_monitoring = valid_items.require_monitoring;
    g_options->error_exitcode = valid_items.error_exitcode;
    g_options->fail_on = valid_items.fail_on;
    return monitoring_off("ASYNCCHECK_OPTIONS: " + error);
  }
  if (g_options->help) say(options_help());
  if (!report::prepare_report(*g_options, g_run->pid, rank, *g_inputs, error)) return monitoring_off(error);
  // Exit handlers run in reverse order of registration. The one registered at the first watched call runs
  // before the CUDA runtime's own teardown (registered during that call); the one registered now is the fallback
  // for a program that never finishes a watched call. The report is written once.
  // Analyzed as the run goes, only the calls each site's report shows are kept: a trace draws every event as the
  // analysis lets it go (report/trace_stream.h). A saved recording of a run analyzed as it went holds its
  // judgements (recording.h: analyzed) and reports the same at the same thresholds.
  OutputFiles files;
  output_files(*g_options, files, error);  // validated with the options
  capture::Options capture;
  capture.analysis.threshold_ns = g_options->threshold;
  capture.analysis.cost_threshold_ns = g_options->cost_threshold;
  const CaptureRange range = parse_capture_range(g_options->capture_range).value_or(CaptureRange{});  // validated
  capture.analysis.profiler_range = range.kind == CaptureRange::Kind::ProfilerApi;
  capture.analysis.in_nvtx_range = nvtx_range_test(range, nvtx_ranges::range);
  capture.env = g_run->env;
  capture.streaming = g_options->compact;
  capture.round_calls = g_options->compact_round;
  capture.max_backlog = g_options->compact_backlog;
  capture.flush_period_ns = g_options->flush_period;
  event_memory::set_cache_limit(size_t{g_options->event_cache_kb} * 1024);
  capture.activity_buffer_bytes = g_options->activity_buffer_kb * 1024;
  capture.device_buffers = g_options->device_buffers;
  capture.device_buffer_bytes = g_options->device_buffer_kb * 1024;
  capture.on_first_call = [] { std::atexit(report_at_exit); };
  std::vector<std::string> api_names;
  for (const cupti::ApiSpec& spec : cupti::watched_apis()) api_names.emplace_back(spec.name);
  if (capture.streaming && !files.trace.empty()) {
    g_trace = new report::TraceStream;
    if (g_trace->open(report::trace_events_path(files.trace, g_run->pid, g_run->rank), api_names, error)) {
      capture.sink = g_trace;
      capture.release_sink = g_trace;
      g_inputs->trace_stream = g_trace;
    } else {
      // The trace is drawn as before the analysis streamed: from every event, kept to the end.
      say("WARNING: " + error + "; every event is kept until the end for the trace");
      delete g_trace;
      g_trace = nullptr;
      capture.streaming = false;
    }
  }
  if (capture.streaming && !g_options->save.empty()) {
    g_recording = new report::RecordingStream;
    const auto tables = [](size_t stacks_from, size_t ranges_from, std::vector<Stack>& stacks,
                           std::vector<NvtxRange>& ranges) {
      stacks = interned_stacks(stacks_from);
      ranges = nvtx_ranges::names(ranges_from);
    };
    RunInfo run = *g_run;  // as known at the start; the tail says the rest
    run.threshold_ns = g_options->threshold;
    run.cost_threshold_ns = g_options->cost_threshold;
    run.capture_range = g_options->capture_range;
    run.complete = false;  // until the tail says otherwise: a recording cut short is incomplete
    if (g_recording->open(expand_path(g_options->save, g_run->pid, g_run->rank), g_options->overwrite, run, api_names,
                          tables, error)) {
      if (g_trace)
        g_trace->chain(g_recording);  // the events go on to the recording
      else
        capture.sink = g_recording;
    } else {
      say("ERROR: " + error + "; the events are not saved");
      delete g_recording;
      g_recording = nullptr;
    }
  }
  std::string warning;
  if (!capture::start(capture, error, warning)) {
    if (error.rfind(cupti::kHeldByUs, 0) == 0) {
      // Another copy of asynccheck (another path, or both shims of different builds) already watches this process
      // and will report; a second report of "nothing watched" would only compete with it for the same files.
      say("another copy of asynccheck already watches this process; this one (" + library_path() +
          ") stays out and writes no report");
      delete g_trace;  // and its drawn events' file
      g_trace = nullptr;
      g_inputs->trace_stream = nullptr;
      return;
    }
    // One line per run (issue 22): not from a helper process (a pyenv shim's, a compiler driver's: its report, at
    // exit, says it if it used CUDA) nor when the asynccheck command reports for this process.
    if (!g_descendant && g_options->handoff.empty()) {
      say("monitoring off: " + error + "; the program runs unchanged");
      g_said_off = true;
    }
    g_run->monitoring = "off: " + error;
    arm();  // the report still says that nothing was watched, and why
    return;
  }
  g_capturing = true;
  if (!warning.empty()) say("WARNING: " + warning);
  // NVTX ranges are context for the findings: without them (another tool has NVTX) everything else still works.
  if (!cupti::enable_nvtx(error)) say("NVTX ranges are off: " + error);
  arm();
}

}  // namespace asynccheck::core
