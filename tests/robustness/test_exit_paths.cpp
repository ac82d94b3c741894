// However the program ends, asynccheck writes its report and the program ends exactly as it would have: each mode
// of exit_paths runs bare and under LD_PRELOAD=libasynccheck.so, and the two wait statuses (exit code, or signal
// and core dump) must be identical. The preloaded run must leave one report per reporting process, saying how
// the program ended and whether the report is complete. No GPU needed: without one asynccheck fails open and
// still reports at the end (docs/robustness.md).
#include <gtest/gtest.h>

#include <map>

#include "launch.h"
#include "test_dir.h"

namespace {

using namespace asynccheck_test;

const fs::path kProgram = ASYNCCHECK_EXIT_PATHS;
const fs::path kCommand = ASYNCCHECK_COMMAND;
const fs::path kLibrary = ASYNCCHECK_LIBRARY;

class ExitPaths : public TestDir {
 protected:
  void SetUp() override { make_dir("asynccheck-robust", {"bare", "preload", "reports"}); }

  Result bare(const std::string& mode, bool cores = false, std::vector<int> when_ready = {}) {
    return run({{kProgram.string(), mode}, {}, dir_ / "bare", cores, when_ready});
  }
  Result preloaded(const std::string& mode, bool cores = false, std::vector<int> when_ready = {}) {
    const std::string reports = (dir_ / "reports").string();
    return run({{kProgram.string(), mode},
                {"LD_PRELOAD=" + kLibrary.string(),
                 "ASYNCCHECK_OPTIONS=log_file=" + reports + "/report.%p.txt:json=" + reports + "/report.%p.json"},
                dir_ / "preload",
                cores,
                when_ready});
  }
  // pid -> JSON report, and the number of summary files.
  std::map<int, std::string> reports(size_t* summaries = nullptr) {
    std::map<int, std::string> json;
    size_t txt = 0;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "reports")) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(".json"))
        json[std::stoi(name.substr(7))] = slurp(e.path());
      else if (name.ends_with(".txt"))
        ++txt;
      else
        ADD_FAILURE() << "unexpected file " << name;  // a temporary file left by a report cut short
    }
    if (summaries) *summaries = txt;
    return json;
  }
};

struct Case {
  const char* mode;
  int signal;       // the program ends by this signal, or
  int code;         // with this exit code
  const char* end;  // RunInfo::end of its report
  bool complete;    // only an ordinary exit completes
  size_t reports;   // reporting processes
  const char* out;  // its standard output
};

const Case kCases[] = {
    {"exit", 0, 3, "exit", true, 1, ""},
    {"buffered-exit", 0, 3, "exit", true, 1, "buffered\n"},
    {"abort", SIGABRT, 0, "signal SIGABRT", false, 1, ""},
    {"segv", SIGSEGV, 0, "signal SIGSEGV", false, 1, ""},
    {"bus", SIGBUS, 0, "signal SIGBUS", false, 1, ""},
#if defined(__x86_64__) || defined(__i386__)
    {"fpe", SIGFPE, 0, "signal SIGFPE", false, 1, ""},
#endif
    {"ill", SIGILL, 0, "signal SIGILL", false, 1, ""},
    {"sigterm", SIGTERM, 0, "signal SIGTERM", false, 1, ""},
    {"sigint", SIGINT, 0, "signal SIGINT", false, 1, ""},
    {"sighup", SIGHUP, 0, "signal SIGHUP", false, 1, ""},
    {"sigquit", SIGQUIT, 0, "signal SIGQUIT", false, 1, ""},
    {"_exit", 0, 4, "_exit", false, 1, ""},
    {"_Exit", 0, 5, "_Exit", false, 1, ""},
    {"quick_exit", 0, 6, "quick_exit", false, 1, ""},
    {"thread-exit", 0, 8, "exit", true, 1, ""},
    {"fork-child-exits", 0, 0, "exit", true, 1, ""},  // the children neither exec nor report
    // The exec'd /bin/true gets the library anew; monitoring off, a child that never loaded the CUDA driver is a
    // helper and says nothing (issue 22: a pyenv shim's helpers printed 47 lines).
    {"fork-exec", 0, 0, "exit", true, 1, ""},
    {"own-handler", 0, 7, "exit", true, 1, "own handler\n"},
    {"chain", SIGTERM, 0, "signal SIGTERM", false, 1, "early handler with siginfo\n"},
    {"ignored", 0, 0, "exit", true, 1, "still ignored\n"},
    {"dfl-raise", SIGINT, 0, "signal SIGINT", false, 1, ""},
    {"ignored-dfl-raise", SIGINT, 0, "signal SIGINT", false, 1, ""},  // ignored at start: no handler of ours
};

std::string expected_status(const Case& c) {
  return c.signal ? "signal " + signal_name(c.signal) : "exit code " + std::to_string(c.code);
}

TEST_F(ExitPaths, EveryEndReportsAndEndsAsItWould) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.mode);
    empty("reports");
    const Result b = bare(c.mode);
    ASSERT_EQ(describe(b.status), expected_status(c)) << b.err;
    const Result p = preloaded(c.mode);
    EXPECT_EQ(describe(p.status), describe(b.status)) << p.err;
    EXPECT_EQ(p.status, b.status);
    EXPECT_EQ(p.out, b.out);
    EXPECT_EQ(p.out, c.out);
    EXPECT_EQ(p.err.find("was not written"), std::string::npos) << p.err;
    size_t summaries = 0;
    const std::map<int, std::string> json = reports(&summaries);
    EXPECT_EQ(json.size(), c.reports);
    EXPECT_EQ(summaries, c.reports);
    ASSERT_TRUE(json.contains(p.pid)) << "no report of the program itself";
    const std::string& own = json.at(p.pid);
    EXPECT_NE(own.find(std::string("\"complete\": ") + (c.complete ? "true" : "false")), std::string::npos) << own;
    EXPECT_NE(own.find(std::string("\"end\": \"") + c.end + "\""), std::string::npos) << own;
    // A fault raised by an instruction says where: the program's own main (RunInfo::fault); a signal sent (abort,
    // kill) has no place.
    const std::string_view mode = c.mode;
    const bool fault = mode == "segv" || mode == "bus" || mode == "fpe" || mode == "ill";
    EXPECT_EQ(own.find("\"fault\": \"at exit_paths+0x") != std::string::npos, fault) << own;
    if (mode == "segv") EXPECT_NE(own.find(", address 0x0\""), std::string::npos) << own;  // *nullptr
    EXPECT_NE(own.find("\"monitoring\": \"off: "), std::string::npos) << "this test expects no GPU: " << own;
    for (const auto& [pid, other] : json) {
      if (pid == p.pid) continue;
      EXPECT_NE(other.find("\"program\": \"/bin/true\""), std::string::npos) << other;
      EXPECT_NE(other.find("\"end\": \"exit\""), std::string::npos) << other;
    }
    if (!c.complete) {  // the summary says how it ended
      EXPECT_NE(slurp(dir_ / "reports" / ("report." + std::to_string(p.pid) + ".txt"))
                    .find(std::string("; the program ended by ") + c.end + (fault ? " (a fault at exit_paths+0x" : "")),
                std::string::npos);
    }
  }
}

// require_monitoring=1 (issue 21), monitoring off here: every end the program chooses ends with code 4 once the
// report is written, its output flushed as the C library would; a signal still ends it by that signal.
TEST_F(ExitPaths, RequireMonitoringEndsEveryExitWithCode4) {
  for (const Case& c : kCases) {
    const std::string_view mode = c.mode;
    if (mode != "exit" && mode != "buffered-exit" && mode != "_exit" && mode != "_Exit" && mode != "quick_exit" &&
        mode != "thread-exit" && mode != "own-handler" && mode != "sigterm" && mode != "abort") {
      continue;
    }
    SCOPED_TRACE(c.mode);
    empty("reports");
    const Result b = bare(c.mode);
    const Result p = run({{kProgram.string(), c.mode},
                          {"LD_PRELOAD=" + kLibrary.string(), "ASYNCCHECK_OPTIONS=require_monitoring=1"},
                          dir_ / "preload"});
    EXPECT_EQ(describe(p.status), c.signal ? describe(b.status) : "exit code 4") << p.err;
    EXPECT_EQ(p.out, b.out);
    if (!c.signal) {
      EXPECT_NE(p.err.find("asynccheck: ERROR: monitoring was off and require_monitoring is set: exit code 4"),
                std::string::npos)
          << p.err;
    }
  }
}

// asynccheck_report_now() writes the report (here, without a GPU, the one saying monitoring is off: 1) before it
// returns, exactly once: a second call returns 1, and the exit that follows writes nothing more and keeps the
// program's code. Bare, the symbol is absent. Under the asynccheck command the same call leaves its hand-off.
TEST_F(ExitPaths, ReportNowWritesOnceAndTheExitNothingMore) {
  const std::string out = (dir_ / "reports").string();
  const Result b = run({{kProgram.string(), "report-now", out}, {}, dir_ / "bare"});
  EXPECT_EQ(describe(b.status), "exit code 3");
  EXPECT_EQ(b.out, "absent\n");
  const Result p = run({{kProgram.string(), "report-now", out},
                        {"LD_PRELOAD=" + kLibrary.string(),
                         "ASYNCCHECK_OPTIONS=log_file=" + out + "/report.%p.txt:json=" + out + "/report.%p.json"},
                        dir_ / "preload"});
  EXPECT_EQ(describe(p.status), "exit code 3") << p.err;
  EXPECT_EQ(p.out, "first=1 files=2 second=1\n") << p.err;  // JSON and summary, written by the first call
  size_t summaries = 0;
  const std::map<int, std::string> json = reports(&summaries);
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(summaries, 1u);
  EXPECT_NE(json.begin()->second.find("\"monitoring\": \"off: "), std::string::npos) << "this test expects no GPU";
  EXPECT_NE(json.begin()->second.find("\"end\": \"exit\""), std::string::npos);

  // A bad option: monitoring off too, the same answer, and the program's code still its own.
  empty("reports");
  const Result bad =
      run({{kProgram.string(), "report-now", out},
           {"LD_PRELOAD=" + kLibrary.string(), "ASYNCCHECK_OPTIONS=json=" + out + "/report.%p.json:no_such_option=1"},
           dir_ / "preload"});
  EXPECT_EQ(describe(bad.status), "exit code 3") << bad.err;
  EXPECT_EQ(bad.out, "first=1 files=1 second=1\n") << bad.err;
  EXPECT_EQ(reports().size(), 1u);

  // The command: one report, from the hand-off the call left, and the program's code.
  empty("reports");
  const Result c =
      run({{kCommand.string(), "--json=" + out + "/report.%p.json", "--", kProgram.string(), "report-now", out},
           {},
           dir_ / "preload"});
  EXPECT_EQ(describe(c.status), "exit code 3") << c.err;
  EXPECT_EQ(c.out, "first=1 files=0 second=1\n") << c.err;
  EXPECT_EQ(reports().size(), 1u) << c.err;
}

// A signal sent from outside (kill, a job scheduler's SIGTERM) while the program waits in a system call.
TEST_F(ExitPaths, SignalFromOutside) {
  const Result b = bare("pause", false, {SIGTERM});
  ASSERT_EQ(describe(b.status), "signal TERM");
  const Result p = preloaded("pause", false, {SIGTERM});
  EXPECT_EQ(p.status, b.status) << describe(p.status) << "\n" << p.err;
  const std::map<int, std::string> json = reports();
  ASSERT_EQ(json.size(), 1u);
  EXPECT_NE(json.begin()->second.find("\"end\": \"signal SIGTERM\""), std::string::npos) << json.begin()->second;
}

// A report that cannot be written (here: the summary goes to a pipe nobody reads, and blocks) must not keep the
// program from ending: after signal_timeout it ends by its signal anyway, and says that the report was lost.
// A second signal meanwhile (Ctrl-C twice) ends it at once.
TEST_F(ExitPaths, StuckReportTimesOutOrYieldsToASecondSignal) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  const std::string fill(4096, 'x');
  while (write(fds[1], fill.data(), fill.size()) > 0) {}
  fcntl(fds[1], F_SETFL, 0);  // full: the next write blocks
  for (const bool twice : {false, true}) {
    SCOPED_TRACE(twice ? "second signal" : "timeout");
    const auto t0 = std::chrono::steady_clock::now();
    Launch l{{kProgram.string(), "pause"},
             {"LD_PRELOAD=" + kLibrary.string(),
              std::string("ASYNCCHECK_OPTIONS=log_file=stdout:signal_timeout=") + (twice ? "60" : "1")},
             dir_ / "preload"};
    l.when_ready = twice ? std::vector<int>{SIGINT, SIGINT} : std::vector<int>{SIGTERM};  // Ctrl-C twice
    l.stdout_fd = fds[1];
    const Result p = run(l);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(describe(p.status), twice ? "signal INT" : "signal TERM") << p.err;
    EXPECT_LT(seconds, 20.0);
    if (!twice) {
      EXPECT_GE(seconds, 1.0);
      EXPECT_NE(p.err.find("asynccheck: ERROR: the report was not written within signal_timeout"), std::string::npos)
          << p.err;
    }
  }
  close(fds[0]);
  close(fds[1]);
}

// Where core files are allowed, a crash still dumps one: the wait status (core flag included) is the bare run's.
TEST_F(ExitPaths, CoreDumpsAsItWould) {
  struct rlimit core {};
  getrlimit(RLIMIT_CORE, &core);
  if (core.rlim_max == 0) GTEST_SKIP() << "core files are not allowed here (hard limit 0)";
  for (const char* mode : {"abort", "segv", "sigquit"}) {
    SCOPED_TRACE(mode);
    const Result b = bare(mode, true);
    const Result p = preloaded(mode, true);
    EXPECT_EQ(describe(p.status), describe(b.status)) << p.err;
    EXPECT_EQ(p.status, b.status);
    for (const char* d : {"bare", "preload"}) {  // core files are big: do not keep them
      for (const fs::directory_entry& e : fs::directory_iterator(dir_ / d)) {
        if (e.path().filename().string().starts_with("core")) fs::remove(e.path());
      }
    }
  }
}

// A path without %p, and an exec'd child that uses no CUDA: the child writes nothing (it would have taken the file,
// and the parent's report failed with "it already exists"); the program's own status is untouched.
TEST_F(ExitPaths, ForkExecWithoutPerProcessNames) {
  const std::string json = (dir_ / "reports" / "one.json").string();
  const Result p = run({{kProgram.string(), "fork-exec"},
                        {"LD_PRELOAD=" + kLibrary.string(), "ASYNCCHECK_OPTIONS=json=" + json},
                        dir_ / "preload"});
  EXPECT_EQ(describe(p.status), "exit code 0");
  EXPECT_EQ(slurp(json).find("\"program\": \"/bin/true\""), std::string::npos);
  EXPECT_NE(slurp(json).find("\"program\": \"" + kProgram.string() + "\""), std::string::npos);
  EXPECT_EQ(p.err.find("asynccheck: ERROR"), std::string::npos) << p.err;
  EXPECT_EQ(count(p.err, "asynccheck: monitoring off"), 1u) << p.err;  // one line, from the program itself
}

// Through the asynccheck command: the command ends as the program did, and reports every process it ran.
TEST_F(ExitPaths, ThroughTheCommand) {
  Result r = run({{kCommand.string(), "--", kProgram.string(), "sigterm"}, {}, dir_ / "preload"});
  ASSERT_TRUE(WIFSIGNALED(r.status)) << describe(r.status) << "\n" << r.err;
  EXPECT_EQ(WTERMSIG(r.status), SIGTERM);
  EXPECT_NE(r.err.find("nothing was watched; the program ended by signal SIGTERM"), std::string::npos) << r.err;

  r = run({{kCommand.string(), "--", kProgram.string(), "_exit"}, {}, dir_ / "preload"});
  EXPECT_EQ(describe(r.status), "exit code 4") << r.err;
  EXPECT_NE(r.err.find("the program ended by _exit"), std::string::npos) << r.err;

  r = run({{kCommand.string(), "--", kProgram.string(), "fork-exec"}, {}, dir_ / "preload"});
  EXPECT_EQ(describe(r.status), "exit code 0") << r.err;
  EXPECT_EQ(count(r.err, "asynccheck: monitoring was off"), 1u) << r.err;  // exit_paths; /bin/true uses no CUDA

  r = run({{kCommand.string(), "--", kProgram.string(), "fork-child-exits"}, {}, dir_ / "preload"});
  EXPECT_EQ(describe(r.status), "exit code 0") << r.err;
  EXPECT_EQ(count(r.err, "asynccheck: monitoring was off"), 1u) << r.err;
}

// signal_timeout=0: no reporter thread and no handler; a signal ends the program unreported, exactly as before.
TEST_F(ExitPaths, SignalTimeoutZeroTurnsSignalReportsOff) {
  const std::string reports = (dir_ / "reports").string();
  const Result p = run(
      {{kProgram.string(), "sigterm"},
       {"LD_PRELOAD=" + kLibrary.string(), "ASYNCCHECK_OPTIONS=signal_timeout=0:json=" + reports + "/report.%p.json"},
       dir_ / "preload"});
  EXPECT_EQ(describe(p.status), "signal TERM");
  EXPECT_TRUE(this->reports().empty());
  const Result e = run(
      {{kProgram.string(), "exit"},
       {"LD_PRELOAD=" + kLibrary.string(), "ASYNCCHECK_OPTIONS=signal_timeout=0:json=" + reports + "/report.%p.json"},
       dir_ / "preload"});
  EXPECT_EQ(describe(e.status), "exit code 3");
  EXPECT_EQ(this->reports().size(), 1u);  // an exit still reports
}

}  // namespace
