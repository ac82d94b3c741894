// The event memory (analysis/event_memory.h): large vectors in mappings, a freed one kept for the next vector of its
// size, at most kCacheBytes kept, the pages a smaller vector will not use given back, and a fork never inheriting
// its lock held.
#include "analysis/event_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <new>
#include <thread>
#include <vector>

#include "analysis/events.h"

namespace asynccheck {
namespace {

using event_memory::kCacheBytes;
using event_memory::kLargestCached;
using event_memory::kMappedFrom;

// How many of the pages of [p, p + bytes) are resident.
size_t resident_pages(void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in(bytes / page);
  EXPECT_EQ(mincore(p, bytes, in.data()), 0);
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

// A vector of `bytes` written whole, then freed: into the cache when it has room for it.
void free_written(size_t bytes) {
  void* p = event_memory::allocate(bytes);
  std::memset(p, 1, bytes);
  event_memory::deallocate(p, bytes);
}

// Each test starts from an empty cache: what an earlier test in the process left there decides what is reused.
class EventMemory : public ::testing::Test {
 protected:
  void SetUp() override { event_memory::release_cache(); }
  void TearDown() override { event_memory::set_cache_limit(kCacheBytes); }
};

TEST_F(EventMemory, SmallVectorsStayWithMalloc) {
  const event_memory::Stats before = event_memory::stats();
  free_written(kMappedFrom - 1);
  const event_memory::Stats after = event_memory::stats();
  EXPECT_EQ(after.maps, before.maps);
  EXPECT_EQ(after.reuses, before.reuses);
}

TEST_F(EventMemory, AFreedBlockServesTheNextVectorOfItsSize) {
  const size_t bytes = 3 * kMappedFrom;  // the 512 KiB class
  void* p = event_memory::allocate(bytes);
  std::memset(p, 1, bytes);
  const event_memory::Stats mapped = event_memory::stats();
  event_memory::deallocate(p, bytes);
  EXPECT_EQ(event_memory::stats().cached_bytes, mapped.cached_bytes + bytes);
  void* q = event_memory::allocate(bytes + 4096);  // the same class
  EXPECT_EQ(q, p);
  const event_memory::Stats reused = event_memory::stats();
  EXPECT_EQ(reused.maps, mapped.maps);
  EXPECT_EQ(reused.reuses, mapped.reuses + 1);
  EXPECT_EQ(reused.cached_bytes, mapped.cached_bytes);
  event_memory::deallocate(q, bytes + 4096);
}

TEST_F(EventMemory, PagesASmallerVectorWillNotUseAreGivenBack) {
  const size_t large = 4 * kMappedFrom - 4096, small = 2 * kMappedFrom + 4096;  // both in the 512 KiB class
  void* p = event_memory::allocate(large);
  std::memset(p, 1, large);
  EXPECT_EQ(resident_pages(p, large), large / 4096);
  event_memory::deallocate(p, large);
  void* q = event_memory::allocate(small);
  ASSERT_EQ(q, p);
  EXPECT_EQ(resident_pages(q, small), small / 4096);  // still there: no page fault to use them
  EXPECT_EQ(resident_pages(static_cast<char*>(q) + small, large - small), 0u);  // given back
  event_memory::deallocate(q, small);
}

TEST_F(EventMemory, ManyFreedBlocksStayWithinTheDefaultLimit) {
  const size_t bytes = 2 * 1024 * 1024;
  std::vector<void*> blocks;
  for (size_t i = 0; i < 2 * kCacheBytes / bytes; ++i) {  // more than the cache may hold, of several sizes
    const size_t n = (i % 2 == 0 ? bytes : bytes / 2);
    void* p = event_memory::allocate(n);
    std::memset(p, 1, n);
    blocks.push_back(p);
  }
  for (size_t i = 0; i < blocks.size(); ++i) event_memory::deallocate(blocks[i], i % 2 == 0 ? bytes : bytes / 2);
  EXPECT_LE(event_memory::stats().cached_bytes, kCacheBytes);
}

// event_cache_kb: what the cache may hold, 0 for nothing (every large vector mapped and unmapped).
TEST_F(EventMemory, TheCacheHoldsNoMoreThanItsLimit) {
  const size_t bytes = 2 * kMappedFrom;
  free_written(bytes);
  ASSERT_EQ(event_memory::stats().cached_bytes, bytes);
  event_memory::set_cache_limit(bytes - 1);  // what it held past the new limit goes
  const event_memory::Stats lowered = event_memory::stats();
  EXPECT_EQ(lowered.cached_bytes, 0u);
  free_written(bytes);  // past the limit: unmapped, not cached
  const event_memory::Stats after = event_memory::stats();
  EXPECT_EQ(after.cached_bytes, 0u);
  EXPECT_EQ(after.mapped_bytes, lowered.mapped_bytes);
  EXPECT_EQ(after.maps, lowered.maps + 1);
  event_memory::set_cache_limit(bytes);
  free_written(bytes);
  EXPECT_EQ(event_memory::stats().cached_bytes, bytes);
}

TEST_F(EventMemory, ReleasingTheCacheUnmapsWhatItHolds) {
  const size_t bytes = 2 * kMappedFrom;
  free_written(bytes);
  const event_memory::Stats cached = event_memory::stats();
  EXPECT_EQ(cached.cached_bytes, bytes);
  event_memory::release_cache();
  const event_memory::Stats released = event_memory::stats();
  EXPECT_EQ(released.cached_bytes, 0u);
  EXPECT_EQ(released.mapped_bytes, cached.mapped_bytes - bytes);
  void* q = event_memory::allocate(bytes);  // a mapping of its own again
  EXPECT_EQ(event_memory::stats().maps, cached.maps + 1);
  event_memory::deallocate(q, bytes);
}

// Short of address space (ulimit -v), a mapping is tried again once the cache is given back; one that still cannot
// be made fails as malloc's would, and the counts stay what is mapped. In a child: the limit would hold for the rest.
TEST_F(EventMemory, ShortOfAddressSpaceTheCacheIsGivenBackFirst) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10);
    const size_t mib = 1024 * 1024;
    event_memory::set_cache_limit(8 * mib);         // room for both blocks below, whatever the default
    void* a = event_memory::allocate(3 * mib);      // the 4 MiB class
    void* b = event_memory::allocate(3 * mib / 2);  // the 2 MiB class
    std::memset(a, 1, 3 * mib);
    std::memset(b, 1, 3 * mib / 2);
    event_memory::deallocate(a, 3 * mib);
    event_memory::deallocate(b, 3 * mib / 2);
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0;
    statm >> pages;
    const rlim_t limit = pages * static_cast<size_t>(sysconf(_SC_PAGESIZE)) + 4 * mib;  // room for 4 MiB more
    const rlimit rl{limit, limit};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(10);
    const event_memory::Stats before = event_memory::stats();
    void* c = nullptr;
    try {
      c = event_memory::allocate(6 * mib);  // the 8 MiB class: fits only once the 6 MiB cached are unmapped
    } catch (const std::bad_alloc&) {
      _exit(11);
    }
    const event_memory::Stats after = event_memory::stats();
    if (after.cached_bytes != 0 || after.maps != before.maps + 1 ||
        after.mapped_bytes != before.mapped_bytes - 6 * mib + 8 * mib) {
      _exit(12);
    }
    bool failed = false;
    try {
      (void)event_memory::allocate(64 * mib);
    } catch (const std::bad_alloc&) {
      failed = true;
    }
    if (!failed) _exit(13);
    const event_memory::Stats last = event_memory::stats();
    if (last.maps != after.maps || last.mapped_bytes != after.mapped_bytes) _exit(14);
    event_memory::deallocate(c, 6 * mib);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  // 10: setrlimit refused; 11: the retry did not map; 12: counts after it; 13: 64 MiB mapped past the limit;
  // 14: a failed mapping counted.
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(EventMemory, TheLargestVectorsAreNeverCached) {
  const event_memory::Stats before = event_memory::stats();
  const size_t bytes = kLargestCached + 1;
  void* p = event_memory::allocate(bytes);
  static_cast<char*>(p)[bytes - 1] = 1;
  EXPECT_EQ(event_memory::stats().maps, before.maps + 1);
  event_memory::deallocate(p, bytes);
  const event_memory::Stats after = event_memory::stats();
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
  EXPECT_EQ(after.mapped_bytes, before.mapped_bytes);
}

// The peak counts what was mapped at once, and stays once it is freed: the stats line's "at most" is the largest the
// vectors and the cache were, not what is mapped at the end.
TEST_F(EventMemory, ThePeakIsWhatWasMappedAtOnce) {
  const size_t bytes = kLargestCached + 1;  // never cached: each a mapping of its own
  const event_memory::Stats before = event_memory::stats();
  void* p = event_memory::allocate(bytes);
  void* q = event_memory::allocate(bytes);
  const event_memory::Stats both = event_memory::stats();
  event_memory::deallocate(p, bytes);
  event_memory::deallocate(q, bytes);
  const event_memory::Stats after = event_memory::stats();
  EXPECT_EQ(both.mapped_bytes, before.mapped_bytes + 2 * ((bytes + 4095) / 4096 * 4096));
  EXPECT_GE(both.peak_mapped_bytes, both.mapped_bytes);
  EXPECT_EQ(after.peak_mapped_bytes, both.peak_mapped_bytes);
  EXPECT_EQ(after.mapped_bytes, before.mapped_bytes);
  // One of them again: below the peak, which stays (a total of every mapping made would grow).
  void* r = event_memory::allocate(bytes);
  event_memory::deallocate(r, bytes);
  EXPECT_EQ(event_memory::stats().peak_mapped_bytes, both.peak_mapped_bytes);
}

TEST_F(EventMemory, EventVectorsGrowMoveAndSwapThroughIt) {
  CallVector a, b;
  for (uint64_t i = 0; i < 4 * kMappedFrom / sizeof(ApiCall); ++i) {
    ApiCall c;
    c.correlation_id = i;
    a.push_back(c);
  }
  b.swap(a);
  CallVector c = std::move(b);
  ASSERT_EQ(c.size(), 4 * kMappedFrom / sizeof(ApiCall));
  EXPECT_EQ(c.back().correlation_id, c.size() - 1);
  EXPECT_TRUE(a.empty() && b.empty());
}

// A fork while other threads allocate and free: the child allocates (the cache's lock is not inherited held) and
// exits normally.
TEST_F(EventMemory, AForkWhileOtherThreadsAllocateLeavesTheChildAbleTo) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&stop, t] {
      while (!stop.load(std::memory_order_relaxed)) {
        const size_t bytes = kMappedFrom << (t % 3);
        void* p = event_memory::allocate(bytes);
        static_cast<char*>(p)[0] = 1;
        event_memory::deallocate(p, bytes);
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(10);  // a lock inherited held would hang the child: SIGALRM ends it, and the test fails
      void* p = event_memory::allocate(2 * kMappedFrom);
      static_cast<char*>(p)[0] = 1;
      event_memory::deallocate(p, 2 * kMappedFrom);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  stop = true;
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace asynccheck
