// Where the event vectors keep their elements (events.h: CallVector, OpVector): the threads' buffers, the rounds,
// the feed's backlog and the analysis' window hold a flood's calls and GPU work by the hundred thousand, in vectors
// grown, merged and handed from the program's threads to the collecting thread to the analyzing one. From malloc, a
// vector freed on another thread than the one that made it goes back to the maker's arena, and each arena kept its
// holes: in an 8-thread flood a fifth of what we added to the program's memory was free memory in the arenas
// (docs/performance-log.md). Here a large vector's memory is a mapping of a power-of-two size, and a freed one waits in
// one cache, shared by every thread, for the next vector of its size: the same pages serve the threads' buffers, the
// rounds and the chunks in turn, and never more than the cache's limit of them wait (kCacheBytes by default). Small
// vectors (a quiet program's) stay with malloc; the largest get a mapping each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace asynccheck {
namespace event_memory {

// Below this, operator new: a mapping per small vector would cost more than the holes it avoids.
inline constexpr size_t kMappedFrom = 128 * 1024;
// By default at most this much freed memory (pages written to, not sizes) waits to be used again (the event_cache_kb
// option: set_cache_limit); past it, a freed mapping is unmapped. What it holds is still resident: it is part of the
// memory a run adds, and bounds it. An 8-thread flood on the H200 kept 6 MiB less at its peak (median of 10 runs)
// with 2 MiB than with 8, and kept up as well (docs/performance-log.md); 1 MiB saved no more.
inline constexpr size_t kCacheBytes = 2 * 1024 * 1024;
// Larger vectors get a mapping of their own (their size, to the page), unmapped when freed: no cache of the option's
// range (event_cache_kb up to 64 MiB) would hold many. In a flood that is the backlog once it holds more than ~60k
// calls. With the default limit, only blocks of at most 2 MiB written (~15k calls) are ever cached.
inline constexpr size_t kLargestCached = 8 * 1024 * 1024;

// The allocation fails (std::bad_alloc) only when a mapping cannot be made even once the cache was given back.
void* allocate(size_t bytes);
void deallocate(void* p, size_t bytes) noexcept;
// The most freed memory the cache may hold from now on (kCacheBytes until set; blocks of kLargestCached at most,
// whatever the limit). What it held is unmapped: set at the start, before anything waits.
void set_cache_limit(size_t bytes);
// Unmaps what the cache holds: the heap given back once the analysis drained after falling behind
// (analysis/feed_threads.h), and a fresh start for the tests.
void release_cache();

struct Stats {
  uint64_t mapped_bytes = 0;  // sizes of the mappings now made, cached or in use
  uint64_t cached_bytes = 0;  // pages written to in the cached ones
  // The most mapped at once: what the event vectors and the cache held at their largest, written to or not (a
  // vector's capacity past its size may not be resident).
  uint64_t peak_mapped_bytes = 0;
  uint64_t maps = 0;    // mappings made so far
  uint64_t reuses = 0;  // allocations served from the cache
};
Stats stats();

}  // namespace event_memory

// The allocator of the event vectors (above). Stateless: any two compare equal, so vectors move and swap freely.
template <typename T>
struct EventAllocator {
  using value_type = T;
  EventAllocator() noexcept = default;
  template <typename U>
  EventAllocator(const EventAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): as std::allocator
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(event_memory::allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { event_memory::deallocate(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const EventAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace asynccheck
