// Our own registry of memory ranges, fed by the allocation calls we watch, because no CUDA API may be called
// inside a CUPTI callback (cudaPointerGetAttributes would also cost 250-500 ns a copy). Lookups are lock-free:
// readers binary-search an immutable snapshot; writers (allocations: rare) publish a new snapshot under a mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "rules/call.h"

namespace asynccheck {

class HostRanges {
 public:
  // [base, base + bytes) has `kind`. An existing range at the same base is replaced.
  void add(uint64_t base, uint64_t bytes, rules::MemoryKind kind);
  // Removes the range that starts at `base` (free/unregister take the base pointer). Returns its kind, or
  // Unknown if none starts there.
  rules::MemoryKind remove(uint64_t base);
  // The kind of the range containing `ptr` (interior pointers included), Unknown if none.
  rules::MemoryKind find(uint64_t ptr) const;
  size_t size() const;

  HostRanges();
  ~HostRanges();
  HostRanges(const HostRanges&) = delete;
  HostRanges& operator=(const HostRanges&) = delete;

 private:
  struct Range {
    uint64_t base;
    uint64_t end;
    rules::MemoryKind kind;
  };
  struct Snapshot {
    std::vector<Range> ranges;  // sorted by base
  };
  void publish(Snapshot* next);

  std::atomic<const Snapshot*> current_;
  std::mutex writer_;
  // Snapshots replaced by a writer. A reader holds a snapshot only for one binary search (well under a
  // microsecond), so one older than a grace period (100 ms) is no longer read and is freed.
  std::vector<std::pair<const Snapshot*, std::chrono::steady_clock::time_point>> retired_;
};

}  // namespace asynccheck
