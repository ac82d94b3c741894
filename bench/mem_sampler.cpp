// What a program's peak resident memory is made of, without a heap profiler (the GPU machine has none): LD_PRELOAD
// this library (before libasynccheck.so). A thread reads the resident size every MEM_SAMPLER_US microseconds (2000
// by default) and, each time it passes its peak by 256 KiB, what malloc holds then (mallinfo2: in use and free in
// its arenas, its own mappings). At exit one line goes to stderr:
//   MEMSAMPLE peak_rss_kb=... arena_in_use_kb=... arena_free_kb=... malloc_mmap_kb=... outside_malloc_kb=... samples=...
// taken at the last sample that raised the peak (within 256 KiB of it): outside_malloc is the rest of the resident
// size (the CUDA driver's mappings, code, stacks, and asynccheck's event memory, whose own peak its `stats` line
// gives). outside_malloc is a lower bound of what is not malloc's: malloc's free memory and its untouched mappings
// need not be resident, yet are subtracted. Compare with a run under the CUPTI floor (bench/libcupti_floor.so) read
// the same way. mallinfo2 walks every arena under its lock, and the sampling costs the program what that costs: read
// the parts, not the timing.
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace {

struct Sample {
  long rss_kb = 0;
  size_t arena_in_use = 0, arena_free = 0, malloc_mmap = 0;
};

std::atomic<bool> g_stop{false};
pthread_t g_thread;
bool g_started = false;
Sample g_peak;
long g_samples = 0;

// bench/proc_memory.h's rss_kb() reads the same file through an ifstream, which allocates: here, between two
// mallinfo2 calls, nothing of ours may.
long rss_kb() {
  static const long page_kb = sysconf(_SC_PAGESIZE) / 1024;
  char buf[128];
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  long pages = 0, resident = 0;
  if (std::sscanf(buf, "%ld %ld", &pages, &resident) != 2) return 0;
  return resident * page_kb;
}

void* sample_loop(void* arg) {
  const long period_us = *static_cast<long*>(arg);
  long noted_kb = 0;  // the resident size at the last full sample
  while (!g_stop.load(std::memory_order_relaxed)) {
    const long rss = rss_kb();
    ++g_samples;
    if (rss > g_peak.rss_kb) g_peak.rss_kb = rss;
    if (rss >= noted_kb + 256) {
      const struct mallinfo2 mi = mallinfo2();
      g_peak = {rss, mi.uordblks, mi.fordblks, mi.hblkhd};
      noted_kb = rss;
    }
    timespec ts{period_us / 1000000, (period_us % 1000000) * 1000};
    nanosleep(&ts, nullptr);
  }
  return nullptr;
}

long g_period_us = 2000;

__attribute__((constructor)) void start() {
  if (const char* s = std::getenv("MEM_SAMPLER_US")) {
    char* end = nullptr;
    const long v = std::strtol(s, &end, 10);
    if (end == s || *end != 0 || v < 100 || v > 1000000) {
      std::fprintf(stderr, "mem_sampler: MEM_SAMPLER_US='%s': expected microseconds from 100 to 1000000\n", s);
      return;
    }
    g_period_us = v;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the program's signals are never delivered to our thread
  g_started = pthread_create(&g_thread, nullptr, sample_loop, &g_period_us) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_atfork(nullptr, nullptr, [] { g_started = false; });  // a forked child has no sampling thread to join
}

__attribute__((destructor)) void stop() {
  if (!g_started) return;
  g_stop.store(true);
  pthread_join(g_thread, nullptr);
  const long kb = 1024;
  const long malloc_kb = static_cast<long>((g_peak.arena_in_use + g_peak.arena_free + g_peak.malloc_mmap) / kb);
  std::fprintf(stderr,
               "MEMSAMPLE peak_rss_kb=%ld arena_in_use_kb=%zu arena_free_kb=%zu malloc_mmap_kb=%zu "
               "outside_malloc_kb=%ld samples=%ld\n",
               g_peak.rss_kb, g_peak.arena_in_use / kb, g_peak.arena_free / kb, g_peak.malloc_mmap / kb,
               g_peak.rss_kb - malloc_kb, g_samples);
}

}  // namespace
