// Epoch-based reclamation for structures that readers walk without a lock (host_ranges.h): a writer publishes a
// new version, then frees what it replaced only once no reader that could still hold the old version remains.
//
// A reader announces, in a slot of its thread's own, the epoch it started in, for as long as it reads. A writer,
// after publishing, advances the epoch and tags what it replaced with the epoch before; anything tagged T can be
// freed once every announced epoch is above T, because a reader that started later reads the new version. All
// the announcing, publishing and scanning is sequentially consistent: that total order is what makes it sound.
#pragma once

#include <cstdint>
#include <limits>

namespace asynccheck::reclaim {

struct Slot;

// Held around one lock-free read. Nests (the outer section counts). Costs one fenced store to a cache line
// of the thread's own, no shared write.
class ReadSection {
 public:
  ReadSection();
  ~ReadSection();
  ReadSection(const ReadSection&) = delete;
  ReadSection& operator=(const ReadSection&) = delete;

 private:
  Slot* slot_;
  bool outer_;
};

// For the writer, after publishing a new version: the tag of what the publish replaced.
uint64_t retire_epoch();
// Whether the calling thread is inside a ReadSection (a writer must not wait for itself).
bool reading();
// The oldest epoch a reader still reads in; what was tagged below it can be freed. Max when no one reads.
uint64_t oldest_reader();
constexpr uint64_t kNoReader = std::numeric_limits<uint64_t>::max();

}  // namespace asynccheck::reclaim
