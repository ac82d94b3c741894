// Running a program as a shell would, for the robustness tests: default signal actions, nothing blocked, its
// output captured, signals sent to it once it is ready, its exact wait status returned.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace asynccheck_test {

namespace fs = std::filesystem;

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A number field of a JSON report ("calls_watched": 123), -1 if absent.
inline long long json_number(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\": (-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// "TERM" for SIGTERM (sigabbrev_np's names, without needing glibc 2.32).
inline std::string signal_name(int sig) {
  static const std::pair<int, const char*> kNames[] = {
      {SIGTERM, "TERM"}, {SIGINT, "INT"}, {SIGHUP, "HUP"}, {SIGQUIT, "QUIT"}, {SIGABRT, "ABRT"}, {SIGSEGV, "SEGV"},
      {SIGBUS, "BUS"},   {SIGFPE, "FPE"}, {SIGILL, "ILL"}, {SIGPIPE, "PIPE"}, {SIGKILL, "KILL"}, {SIGTRAP, "TRAP"}};
  for (const auto& [n, name] : kNames) {
    if (n == sig) return name;
  }
  return std::to_string(sig);
}

inline std::string describe(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "signal " + signal_name(WTERMSIG(status)) + (WCOREDUMP(status) ? " (core dumped)" : "");
  }
  return "status " + std::to_string(status);
}

struct Result {
  pid_t pid = 0;
  int status = 0;  // as from waitpid
  std::string out, err;
};

struct Launch {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // added to the environment
  fs::path cwd;                  // where a core file would go
  bool cores = false;            // raise the core size limit to the hard limit (else 0: no core files)
  std::vector<int> when_ready;   // signals to send, 300 ms apart, once the program printed "ready" on stderr
  int stdout_fd = -1;            // the program's standard output, instead of a file
};

// Runs a program as a shell would: default signal actions, nothing blocked, LD_PRELOAD only if given.
inline Result run(const Launch& l) {
  const fs::path out = l.cwd / "stdout", err = l.cwd / "stderr";
  pid_t pid = fork();
  if (pid == 0) {
    // The test runner may ignore or block signals (a background job ignores SIGINT and SIGQUIT); the program must
    // start as it would from a terminal.
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct rlimit core {};
    getrlimit(RLIMIT_CORE, &core);
    core.rlim_cur = l.cores ? core.rlim_max : 0;
    setrlimit(RLIMIT_CORE, &core);
    if (chdir(l.cwd.c_str()) != 0) _exit(126);
    if (l.stdout_fd >= 0 ? dup2(l.stdout_fd, STDOUT_FILENO) < 0 : !freopen(out.c_str(), "w", stdout)) _exit(126);
    if (!freopen(err.c_str(), "w", stderr)) _exit(126);
    unsetenv("LD_PRELOAD");
    unsetenv("ASYNCCHECK_OPTIONS");
    for (const std::string& e : l.env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const std::string& a : l.argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  Result r;
  r.pid = pid;
  if (!l.when_ready.empty()) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (slurp(err).find("ready\n") == std::string::npos && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (size_t k = 0; k < l.when_ready.size(); ++k) {
      if (k) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      kill(pid, l.when_ready[k]);
    }
  }
  waitpid(pid, &r.status, 0);
  if (l.stdout_fd < 0) r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace asynccheck_test
