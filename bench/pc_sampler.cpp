// Where a program's threads spend their CPU time, without perf (the GPU machine has none): LD_PRELOAD this library
// and set PC_SAMPLER_OUT=PREFIX. Every PC_SAMPLER_US microseconds of the process' CPU time (200 by default; the
// kernel's tick bounds it) SIGPROF interrupts a running thread, whose program counter and thread id are kept; at
// exit PREFIX.PID.samples ("TID PC" per line, hex PC) and PREFIX.PID.maps (/proc/self/maps) are written.
// bench/pc_samples.py PREFIX.PID turns them into shares per module and function (nm's symbols, on the machine
// that ran it). Threads that block SIGPROF are not sampled: asynccheck's own threads block every signal
// (common/signals_blocked.h), so this measures the program's threads, which is where its cost per call is paid.
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

void on_prof(int, siginfo_t*, void* context) {
  const unsigned i = g_count.fetch_add(1, std::memory_order_relaxed);
  if (i >= kSamples) return;
  g_pcs[i] = static_cast<unsigned long>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
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
  itimerval it{{0, us}, {0, us}};
  setitimer(ITIMER_PROF, &it, nullptr);
}

__attribute__((destructor)) void stop() {
  const char* prefix = std::getenv("PC_SAMPLER_OUT");
  if (!prefix) return;
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
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
