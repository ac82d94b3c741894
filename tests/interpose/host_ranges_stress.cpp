// Many threads allocating, freeing and looking up in one HostRanges at once, as a multi-threaded data loader
// does: run plain, under AddressSanitizer (a reader touching a freed node is reported) and under ThreadSanitizer
// (a node read while written is reported). Every lookup is checked against what its thread knows must be there.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "interpose/host_ranges.h"

using asynccheck::HostRanges;
using asynccheck::rules::MemoryKind;

int main() {
  constexpr int kThreads = 8;
  constexpr int kRounds = 20000;
  HostRanges ranges;
  for (uint64_t i = 0; i < 1000; ++i) ranges.add(0x10000000 + i * 0x1000, 0x1000, MemoryKind::Pinned);
  std::atomic<long> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const uint64_t mine = 0x100000000ull * (t + 1);  // this thread's own region
      for (int i = 0; i < kRounds; ++i) {
        const uint64_t base = mine + (i % 64) * 0x10000;
        ranges.add(base, 0x8000, i % 2 ? MemoryKind::Device : MemoryKind::Pinned);
        if (ranges.find(base + 0x7fff) != (i % 2 ? MemoryKind::Device : MemoryKind::Pinned)) ++wrong;
        if (ranges.find(0x10000000 + (i % 1000) * 0x1000 + 5) != MemoryKind::Pinned) ++wrong;  // always there
        if (i % 3 == 0 && ranges.remove(base) == MemoryKind::Unknown) ++wrong;
        if (i % 3 == 0 && ranges.find(base) != MemoryKind::Unknown) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  const size_t retired = ranges.retired();
  std::printf(
      "host_ranges_stress: %d threads x %d rounds, %zu live ranges, %zu nodes awaiting reclamation, %ld wrong\n",
      kThreads, kRounds, ranges.size(), retired, wrong.load());
  return wrong.load() == 0 && retired <= 256 + 2 * ranges.size() ? EXIT_SUCCESS : EXIT_FAILURE;
}
