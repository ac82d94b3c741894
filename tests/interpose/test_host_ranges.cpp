// The capture's own registry of allocations: how a copy's host pointer is classified without calling CUDA.
#include <gtest/gtest.h>

#include <thread>

#include "interpose/host_ranges.h"

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

}  // namespace
}  // namespace asynccheck
