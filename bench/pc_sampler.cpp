// Where a program's threads spend their CPU time, without perf (the GPU machine has none): LD_PRELOAD this library
// and set PC_SAMPLER_OUT=PREFIX. Every PC_SAMPLER_US microseconds of the process' CPU time (200 by default, at most
// 999999; the kernel's tick bounds it) SIGPROF interrupts a thread, whose program counter and thread id are kept; at
// exit PREFIX.PID.samples ("TID PC" per line, hex PC) and PREFIX.PID.maps (/proc/self/maps) are written.
// bench/pc_samples.py PREFIX.PID turns them into shares per thread, module and function (nm's symbols, on the
// machine that ran it). The timer is the process', its signal goes to a thread that does not block it: asynccheck's
// own threads block every signal (common/signals_blocked.h), so the CPU time they use is sampled in another thread,
// one of the program's, at whatever it is doing then (sleeping in a system call, for one that waits). Read a
// thread's samples as where that thread was, not as its own CPU time: per call, the share of the calling thread's
// samples times its measured time per call. x86-64 and AArch64.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>

namespace {

constexpr unsigned kSamples = 1u << 21;
unsigned long g_pcs[kSamples];
int g_tids[kSamples];
std::atomic<unsigned> g_count{0};
bool g_sampling = false;

void on_prof(int, siginfo_t*, void* context) {
  const unsigned i = g_count.fetch_add(1, std::memory_order_relaxed);
  if (i >= kSamples) return;
#if defined(__x86_64__)
  g_pcs[i] = static_cast<unsigned long>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  g_pcs[i] = static_cast<unsigned long>(static_cast<ucontext_t*>(context)->uc_mcontext.pc);
#else
  (void)context;
  g_pcs[i] = 0;
#endif
  g_tids[i] = static_cast<int>(syscall(SYS_gettid));
}

void copy_file(const char* from, const char* to) {
  FILE* in = std::fopen(from, "r");
  FILE* out = std::fopen(to, "w");
  char buf[4096];
  size_t n = 0;
  while (in && out && (n = std::fread(buf, 1, sizeof buf, in)) > 0) std::fwrite(buf, 1, n, out);
  if (in) std::fclose(in);
  if (out) std::fclose(out);
}

__attribute__((constructor)) void start() {
  if (!std::getenv("PC_SAMPLER_OUT")) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_prof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  const char* us_text = std::getenv("PC_SAMPLER_US");
  const long us = us_text ? std::atol(us_text) : 200;
  if (us < 1 || us > 999999) {
    std::fprintf(stderr, "pc_sampler: ERROR: PC_SAMPLER_US=%s: expected microseconds from 1 to 999999; not sampling\n",
                 us_text);
    return;
  }
  itimerval it{{0, us}, {0, us}};
  if (setitimer(ITIMER_PROF, &it, nullptr) != 0) {
    std::perror("pc_sampler: ERROR: setitimer");
    return;
  }
  g_sampling = true;
}

__attribute__((destructor)) void stop() {
  const char* prefix = std::getenv("PC_SAMPLER_OUT");
  if (!prefix || !g_sampling) return;
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  signal(SIGPROF, SIG_IGN);  // a signal still pending must not write while the samples are read
  char path[4096];
  std::snprintf(path, sizeof path, "%s.%d.samples", prefix, static_cast<int>(getpid()));
  if (FILE* f = std::fopen(path, "w")) {
    const unsigned n = std::min(g_count.load(), kSamples);
    for (unsigned i = 0; i < n; ++i) std::fprintf(f, "%d %lx\n", g_tids[i], g_pcs[i]);
    std::fclose(f);
  }
  std::snprintf(path, sizeof path, "%s.%d.maps", prefix, static_cast<int>(getpid()));
  copy_file("/proc/self/maps", path);
}

}  // namespace
