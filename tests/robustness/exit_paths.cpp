// A program that ends in the way its argument names, for the robustness tests (test_exit_paths.cpp): run bare and
// under LD_PRELOAD=libasynccheck.so, it must end the same way, and the preloaded run must leave its report.
// No CUDA: without a GPU asynccheck fails open ("monitoring off") but still reports at the end, which is what
// these tests watch. Not linked to asynccheck.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

namespace {

void say(const char* line) {
  ssize_t ignored = write(STDOUT_FILENO, line, std::strlen(line));
  (void)ignored;
}

void own_handler(int) {
  say("own handler\n");
  std::exit(7);
}

// Installed before any library's constructor (preinit_array), so before asynccheck's: asynccheck must chain to it.
void early_handler(int sig, siginfo_t* info, void*) {
  say(info != nullptr && info->si_signo == sig ? "early handler with siginfo\n" : "early handler without siginfo\n");
  signal(sig, SIG_DFL);
  raise(sig);  // pending until this handler returns, then ends the program by the default action
}

void preinit(int argc, char** argv, char**) {
  if (argc < 2) return;
  const std::string_view mode = argv[1];
  if (mode == "chain") {
    struct sigaction sa {};
    sa.sa_sigaction = early_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
  } else if (mode == "ignored") {
    signal(SIGHUP, SIG_IGN);  // as nohup does before exec
  } else if (mode == "ignored-dfl-raise") {
    signal(SIGINT, SIG_IGN);  // as a shell does for a background job
  }
}

}  // namespace

__attribute__((section(".preinit_array"), used)) static void (*const kPreinit)(int, char**, char**) = preinit;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: exit_paths MODE\n");
    return 2;
  }
  const std::string_view mode = argv[1];
  if (mode == "exit") std::exit(3);
  if (mode == "report-now") {  // asynccheck_report_now, twice, then exit(3); argv[2]: the reports' directory
    using ReportNow = int (*)();
    const auto report_now = reinterpret_cast<ReportNow>(dlsym(RTLD_DEFAULT, "asynccheck_report_now"));
    if (report_now == nullptr) {
      say("absent\n");
      std::exit(3);
    }
    const int first = report_now();
    int files = 0;  // written by the call itself, not by the exit that follows
    if (DIR* d = argc > 2 ? opendir(argv[2]) : nullptr) {
      while (const dirent* e = readdir(d)) files += e->d_name[0] != '.';
      closedir(d);
    }
    const int second = report_now();
    std::printf("first=%d files=%d second=%d\n", first, files, second);
    std::exit(3);
  }
  if (mode == "buffered-exit") {  // left in stdio's buffer (stdout is a file): exit() flushes it after its handlers
    std::printf("buffered\n");
    std::exit(3);
  }
  if (mode == "abort") std::abort();
  if (mode == "segv") *static_cast<volatile int*>(nullptr) = 1;
  if (mode == "fpe") {  // an integer division by zero the compiler cannot see (x86 traps; others return 0)
    volatile int zero = argc - 2;
    volatile int result = argc / zero;
    return result;
  }
  if (mode == "bus") {  // touching a mapping beyond the end of its file
    FILE* f = std::tmpfile();
    auto* p = static_cast<volatile char*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0));
    if (p != MAP_FAILED) p[0] = 1;
    return 1;
  }
  if (mode == "ill") {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_trap();  // ud2: SIGILL
#elif defined(__aarch64__)
    asm volatile(".inst 0x00000000");  // udf #0: SIGILL raised by an instruction, as on x86
#else
    raise(SIGILL);
#endif
  }
  if (mode == "sigterm") raise(SIGTERM);
  if (mode == "sigint") raise(SIGINT);
  if (mode == "sighup") raise(SIGHUP);
  if (mode == "sigquit") raise(SIGQUIT);
  if (mode == "_exit") _exit(4);
  if (mode == "_Exit") _Exit(5);
  if (mode == "quick_exit") std::quick_exit(6);
  if (mode == "pause") {  // the test sends signals from outside once it reads this line (on stderr: stdout may be full)
    ssize_t ignored = write(STDERR_FILENO, "ready\n", 6);
    (void)ignored;
    for (;;) pause();
  }
  if (mode == "thread-exit") {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::exit(8);
    }).detach();
    std::atomic<unsigned long> spin{0};  // busy, as a thread making CUDA calls would be
    for (;;) {
      if (spin.fetch_add(1, std::memory_order_relaxed) % 1024 == 0)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  if (mode == "fork-child-exits") {  // children that neither exec nor use CUDA: one exit(), one _exit()
    for (int k = 0; k < 2; ++k) {
      pid_t pid = fork();
      if (pid == 0) {
        if (k == 0) std::exit(0);
        _exit(0);
      }
      int status = 0;
      if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    }
    return 0;
  }
  if (mode == "fork-exec") {
    pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/true", "/bin/true", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  if (mode == "own-handler") {  // installed after asynccheck's: it wins
    signal(SIGTERM, own_handler);
    raise(SIGTERM);
  }
  if (mode == "chain") raise(SIGTERM);
  if (mode == "ignored") {
    raise(SIGHUP);
    struct sigaction now {};
    sigaction(SIGHUP, nullptr, &now);
    say(now.sa_handler == SIG_IGN ? "still ignored\n" : "not ignored\n");
    return 0;
  }
  if (mode == "dfl-raise" || mode == "ignored-dfl-raise") {  // Python after an unhandled KeyboardInterrupt
    signal(SIGINT, SIG_DFL);
    kill(getpid(), SIGINT);
  }
  std::fprintf(stderr, "exit_paths: unknown mode '%s'\n", argv[1]);
  return 2;
}
