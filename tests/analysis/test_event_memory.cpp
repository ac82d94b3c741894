// The event memory (analysis/event_memory.h): large vectors in mappings, a freed one kept for the next vector of its
// size, at most kCacheBytes kept, the pages a smaller vector will not use given back, and a fork never inheriting
// its lock held.
#include "analysis/event_memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
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

TEST(EventMemory, SmallVectorsStayWithMalloc) {
  const event_memory::Stats before = event_memory::stats();
  void* p = event_memory::allocate(kMappedFrom - 1);
  std::memset(p, 1, kMappedFrom - 1);
  event_memory::deallocate(p, kMappedFrom - 1);
  const event_memory::Stats after = event_memory::stats();
  EXPECT_EQ(after.maps, before.maps);
  EXPECT_EQ(after.reuses, before.reuses);
}

TEST(EventMemory, AFreedBlockServesTheNextVectorOfItsSize) {
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

TEST(EventMemory, PagesASmallerVectorWillNotUseAreGivenBack) {
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

TEST(EventMemory, TheCacheKeepsAtMostItsLimit) {
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

TEST(EventMemory, TheLargestVectorsAreNeverCached) {
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

TEST(EventMemory, EventVectorsGrowMoveAndSwapThroughIt) {
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
TEST(EventMemory, AForkWhileOtherThreadsAllocateLeavesTheChildAbleTo) {
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
