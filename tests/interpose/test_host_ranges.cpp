// The capture's own registry of allocations: how a copy's host pointer is classified without calling CUDA.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "interpose/host_ranges.h"
#include "interpose/reclaim.h"

namespace asynccheck {
namespace {

using rules::MemoryKind;

TEST(HostRanges, RegisteredInteriorPointerIsPinned) {
  HostRanges r;
  r.add(0x10000, 4096, MemoryKind::Pinned);  // cudaHostRegister(p, 4096)
  EXPECT_EQ(r.find(0x10000), MemoryKind::Pinned);
  EXPECT_EQ(r.find(0x10000 + 100), MemoryKind::Pinned);    // interior
  EXPECT_EQ(r.find(0x10000 + 4095), MemoryKind::Pinned);   // last byte
  EXPECT_EQ(r.find(0x10000 + 4096), MemoryKind::Unknown);  // one past the end
  EXPECT_EQ(r.find(0x10000 - 1), MemoryKind::Unknown);
}

TEST(HostRanges, UnregisterAndFreeForgetTheRange) {
  HostRanges r;
  r.add(0x10000, 4096, MemoryKind::Pinned);
  r.add(0x20000, 4096, MemoryKind::Device);
  EXPECT_EQ(r.remove(0x10000), MemoryKind::Pinned);
  EXPECT_EQ(r.find(0x10010), MemoryKind::Unknown);
  EXPECT_EQ(r.find(0x20010), MemoryKind::Device);
  EXPECT_EQ(r.remove(0x20010), MemoryKind::Unknown);  // free takes the base pointer; an interior one frees nothing
  EXPECT_EQ(r.size(), 1u);
}

TEST(HostRanges, ReusedAddressTakesTheNewKind) {
  HostRanges r;
  r.add(0x10000, 4096, MemoryKind::Pinned);
  r.remove(0x10000);
  r.add(0x10000, 8192, MemoryKind::Managed);
  EXPECT_EQ(r.find(0x10000 + 5000), MemoryKind::Managed);
}

TEST(HostRanges, ReadersSeeConsistentSnapshotsWhileWritersPublish) {
  HostRanges r;
  r.add(0x1000000, 64, MemoryKind::Pinned);  // stays for the whole test
  std::atomic<bool> stop{false};
  std::atomic<long> wrong{0};
  std::thread reader([&] {
    while (!stop) {
      if (r.find(0x1000000 + 10) != MemoryKind::Pinned) ++wrong;
    }
  });
  for (uint64_t i = 1; i <= 2000; ++i) {
    r.add(0x2000000 + i * 128, 64, MemoryKind::Device);
    if (i % 2 == 0) r.remove(0x2000000 + (i - 1) * 128);
  }
  stop = true;
  reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(r.size(), 1u + 1000u);
}

TEST(HostRanges, ManyLiveRangesKeepTheTreeAndNoGarbage) {
  HostRanges r;
  for (uint64_t i = 0; i < 5000; ++i) r.add(0x100000 + i * 0x1000, 0x800, MemoryKind::Pinned);
  for (uint64_t i = 0; i < 20000; ++i) {  // a data loader pinning and unpinning a batch, 5000 others live
    r.add(0x90000000, 4096, MemoryKind::Pinned);
    ASSERT_EQ(r.remove(0x90000000), MemoryKind::Pinned);
  }
  EXPECT_EQ(r.size(), 5000u);
  EXPECT_EQ(r.retired(), 0u);  // no reader: what each update replaced is freed at once
  for (uint64_t i = 0; i < 5000; i += 97) {
    EXPECT_EQ(r.find(0x100000 + i * 0x1000 + 0x7ff), MemoryKind::Pinned);
    EXPECT_EQ(r.find(0x100000 + i * 0x1000 + 0x800), MemoryKind::Unknown);
  }
}

TEST(HostRanges, RangeAtTheTopOfTheAddressSpace) {
  HostRanges r;
  r.add(UINT64_MAX - 10, 100, MemoryKind::Pinned);  // the end would wrap: it stops at the top
  EXPECT_EQ(r.find(UINT64_MAX - 1), MemoryKind::Pinned);
  r.add(UINT64_MAX, 1, MemoryKind::Device);
  EXPECT_EQ(r.find(UINT64_MAX), MemoryKind::Device);
  EXPECT_EQ(r.remove(UINT64_MAX), MemoryKind::Device);
  EXPECT_EQ(r.size(), 1u);
}

// A reader that started before an update holds back the freeing of what the update replaced, however long it
// takes (the old design freed it after 100 ms); once it leaves, the next update frees it all.
TEST(Reclaim, AReaderHoldsBackOnlyWhatItCouldStillRead) {
  const uint64_t before = reclaim::retire_epoch();
  EXPECT_EQ(reclaim::oldest_reader(), reclaim::kNoReader);
  std::atomic<int> phase{0};
  std::thread reader([&] {
    reclaim::ReadSection reading;
    {
      reclaim::ReadSection nested;  // the outer section counts
    }
    phase = 1;
    while (phase != 2) std::this_thread::yield();
  });
  while (phase != 1) std::this_thread::yield();
  const uint64_t held = reclaim::oldest_reader();
  EXPECT_GT(held, before);
  const uint64_t tag = reclaim::retire_epoch();  // an update published while the reader reads
  EXPECT_LE(held, tag);                          // so what it replaced must wait
  phase = 2;
  reader.join();
  EXPECT_EQ(reclaim::oldest_reader(), reclaim::kNoReader);
}

// A reader paused in the middle of a lookup (preempted, stopped) for longer than the old design's 100 ms grace:
// nothing it could read is freed meanwhile, and the program's allocations do not hang on it.
TEST(HostRanges, APausedReaderKeepsWhatItCouldReadAndNeverHangsAnUpdate) {
  HostRanges r;
  r.add(0x1000, 64, MemoryKind::Pinned);
  std::atomic<bool> release{false};
  std::atomic<bool> reading{false};
  std::thread reader([&] {
    reclaim::ReadSection paused;
    reading = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!reading) std::this_thread::yield();
  for (uint64_t i = 0; i < 300; ++i) {  // each waits 1 ms at most past the bound
    r.add(0x100000 + i * 0x100, 64, MemoryKind::Device);
    r.remove(0x100000 + i * 0x100);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  r.add(0x3000, 64, MemoryKind::Pinned);
  EXPECT_GT(r.retired(), 256u + 2 * r.size()) << "nodes a paused reader could hold were freed";
  release = true;
  reader.join();
  r.add(0x2000, 64, MemoryKind::Pinned);
  EXPECT_EQ(r.retired(), 0u);  // the reader left: everything goes at the next update
  EXPECT_EQ(r.find(0x1010), MemoryKind::Pinned);
}

// An update made inside a lookup on the same thread (a signal handler's allocation) does not wait for itself.
TEST(HostRanges, AnUpdateInsideThisThreadsLookupDoesNotWaitForIt) {
  HostRanges r;
  const auto start = std::chrono::steady_clock::now();
  {
    reclaim::ReadSection reading;
    for (uint64_t i = 0; i < 2000; ++i) {
      r.add(0x100000 + i * 0x100, 64, MemoryKind::Device);
      r.remove(0x100000 + i * 0x100);
    }
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));  // 4000 x 1 ms would be 4 s
  r.add(0x2000, 64, MemoryKind::Pinned);
  EXPECT_EQ(r.retired(), 0u);
}

}  // namespace
}  // namespace asynccheck
