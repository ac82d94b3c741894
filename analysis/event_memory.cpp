#include "analysis/event_memory.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <mutex>

namespace asynccheck::event_memory {
namespace {

constexpr size_t kPage = 4096;
constexpr int kSmallestClass = std::countr_zero(kMappedFrom);
constexpr int kLargestClass = std::countr_zero(kLargestCached);
constexpr int kClasses = kLargestClass - kSmallestClass + 1;
// Blocks cached per size at most: a flood's vectors of one size in flight between the threads are a handful.
constexpr int kPerClass = 8;
static_assert(std::has_single_bit(kMappedFrom) && std::has_single_bit(kLargestCached));

size_t page_round(size_t bytes) { return (bytes + kPage - 1) & ~(kPage - 1); }

// The size class of a mapped allocation: the power of two that holds it (its mapping's size).
int size_class(size_t bytes) { return static_cast<int>(std::bit_width(bytes - 1)) - kSmallestClass; }
size_t class_bytes(int c) { return size_t{1} << (c + kSmallestClass); }

struct Block {
  void* p = nullptr;
  size_t dirty = 0;  // bytes from the start that may have been written to (resident)
};

// One lock for every thread: held only to take or put a block, never across a system call. Constant-initialized,
// not made at first use: a fork while another thread made it would leave the child waiting on its guard for good.
// fork() holds the lock (the handlers below), so that a child never inherits it held by a thread it does not have.
struct Cache {
  std::mutex mu;
  Block blocks[kClasses][kPerClass] = {};
  int count[kClasses] = {};
  size_t cached_dirty = 0;
  size_t limit = kCacheBytes;
  Stats stats;
};
constinit Cache g_cache;
[[maybe_unused]] const int g_fork_handlers =
    pthread_atfork([] { g_cache.mu.lock(); }, [] { g_cache.mu.unlock(); }, [] { g_cache.mu.unlock(); });

// A new mapping, counted once it is made. When the address space is short (ulimit -v, overcommit off), the cache is
// given back and the mapping tried again before the vector's allocation fails as malloc's would.
void* map(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    release_cache();
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
  }
  // Resident memory is what this bounds: a transparent huge page would make a vector's first write 2 MiB of it.
  madvise(p, bytes, MADV_NOHUGEPAGE);
  std::lock_guard lock(g_cache.mu);
  g_cache.stats.mapped_bytes += bytes;
  g_cache.stats.peak_mapped_bytes = std::max(g_cache.stats.peak_mapped_bytes, g_cache.stats.mapped_bytes);
  ++g_cache.stats.maps;
  return p;
}

}  // namespace

void* allocate(size_t bytes) {
  if (bytes < kMappedFrom) return ::operator new(bytes);
  if (bytes > kLargestCached) return map(page_round(bytes));
  const int k = size_class(bytes);
  Block b;
  {
    std::lock_guard lock(g_cache.mu);
    if (g_cache.count[k] != 0) {
      b = g_cache.blocks[k][--g_cache.count[k]];
      g_cache.cached_dirty -= b.dirty;
      ++g_cache.stats.reuses;
    }
  }
  if (b.p == nullptr) return map(class_bytes(k));
  // Pages written to by a larger vector before, past what this one may use: given back, or they stay resident.
  const size_t need = page_round(bytes);
  if (b.dirty > need) madvise(static_cast<char*>(b.p) + need, b.dirty - need, MADV_DONTNEED);
  return b.p;
}

void deallocate(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes < kMappedFrom) {
    ::operator delete(p);
    return;
  }
  if (bytes > kLargestCached) {
    munmap(p, page_round(bytes));
    std::lock_guard lock(g_cache.mu);
    g_cache.stats.mapped_bytes -= page_round(bytes);
    return;
  }
  const int k = size_class(bytes);
  const size_t dirty = page_round(bytes);  // a vector writes no further than its capacity
  {
    std::lock_guard lock(g_cache.mu);
    if (g_cache.count[k] < kPerClass && g_cache.cached_dirty + dirty <= g_cache.limit) {
      g_cache.blocks[k][g_cache.count[k]++] = {p, dirty};
      g_cache.cached_dirty += dirty;
      return;
    }
    g_cache.stats.mapped_bytes -= class_bytes(k);
  }
  munmap(p, class_bytes(k));
}

// Takes every cached block out (under the lock) and unmaps them (outside it).
void release_cache() {
  Block taken[kClasses * kPerClass];
  size_t sizes[kClasses * kPerClass];
  int n = 0;
  {
    std::lock_guard lock(g_cache.mu);
    for (int k = 0; k < kClasses; ++k) {
      while (g_cache.count[k] != 0) {
        taken[n] = g_cache.blocks[k][--g_cache.count[k]];
        sizes[n++] = class_bytes(k);
        g_cache.stats.mapped_bytes -= class_bytes(k);
      }
    }
    g_cache.cached_dirty = 0;
  }
  for (int i = 0; i < n; ++i) munmap(taken[i].p, sizes[i]);
}

void set_cache_limit(size_t bytes) {
  {
    std::lock_guard lock(g_cache.mu);
    g_cache.limit = bytes;
  }
  release_cache();  // set at the start, before anything is cached; a test's lower limit must not be exceeded
}

Stats stats() {
  std::lock_guard lock(g_cache.mu);
  Stats s = g_cache.stats;
  s.cached_bytes = g_cache.cached_dirty;
  return s;
}

}  // namespace asynccheck::event_memory
