// The allocation registry's cost as a program that pins per batch sees it (issue 22): with N ranges live, the
// time of one add+remove pair on the calling thread, and of a lookup, with T threads doing the same at once.
//   host_ranges_bench [live=5000] [threads=1] [pairs=20000]
// Prints one line; peak RSS comes from /usr/bin/time -f %M around it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "interpose/host_ranges.h"

using asynccheck::HostRanges;
using asynccheck::rules::MemoryKind;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const uint64_t live = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 5000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const uint64_t pairs = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 20000;
  HostRanges ranges;
  for (uint64_t i = 0; i < live; ++i) ranges.add(0x10000000 + i * 0x10000, 0x8000, MemoryKind::Pinned);
  std::vector<double> pair_ns(threads), find_ns(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const uint64_t base = 0x100000000000ull + t * 0x100000;
      auto start = Clock::now();
      for (uint64_t i = 0; i < pairs; ++i) {
        ranges.add(base, 4096, MemoryKind::Pinned);
        ranges.remove(base);
      }
      pair_ns[t] = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(pairs);
      start = Clock::now();
      uint64_t hits = 0;
      for (uint64_t i = 0; i < pairs; ++i)
        hits += ranges.find(0x10000000 + (i % live) * 0x10000 + 5) != MemoryKind::Unknown;
      find_ns[t] = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(pairs);
      if (hits != pairs) std::abort();
    });
  }
  for (auto& th : pool) th.join();
  double pair = 0, find = 0;
  for (int t = 0; t < threads; ++t) pair += pair_ns[t] / threads, find += find_ns[t] / threads;
  std::printf("live=%llu threads=%d: add+remove %.0f ns, lookup %.0f ns (mean per thread)\n",
              static_cast<unsigned long long>(live), threads, pair, find);
  return 0;
}
