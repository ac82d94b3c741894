// The activity buffers' pool (cupti/activity.cpp): how many decoded buffers are kept for CUPTI's next requests;
// which decoded work counts as lost (untimed).
#include <gtest/gtest.h>

#include "cupti/activity.h"

namespace asynccheck::cupti {
namespace {

TEST(ActivitySpares, UpToFourMiBOfSmallBuffersFourOfLargerOnes) {
  EXPECT_EQ(spare_slots(256 << 10), 16u);
  EXPECT_EQ(spare_slots(512 << 10), 8u);
  EXPECT_EQ(spare_slots(64 << 10), 16u);  // activity_buffer_kb's default and smallest: at most 16
  EXPECT_EQ(spare_slots(1 << 20), 4u);
  EXPECT_EQ(spare_slots(4 << 20), 4u);
}

TEST(ActivitySpares, LargerBuffersKeepAtMostSixteenMiBButAlwaysOne) {
  EXPECT_EQ(spare_slots(8 << 20), 2u);
  EXPECT_EQ(spare_slots(12 << 20), 1u);
  EXPECT_EQ(spare_slots(16 << 20), 1u);
  EXPECT_EQ(spare_slots(size_t{256} << 20), 1u);  // its largest: one spare, not a gigabyte
}

// Work CUPTI could not time (no device buffer left: the device_buffers option) counts as lost evidence; a
// synchronization record is timed on the host and never counts.
TEST(ActivityUntimed, KernelsCopiesAndMemsetsWithoutAStartCount) {
  OpVector ops(6);
  ops[0].kind = GpuOpKind::Kernel;
  ops[1].kind = GpuOpKind::Memcpy;
  ops[2].kind = GpuOpKind::Memset;
  ops[3].kind = GpuOpKind::Sync;
  ops[4].kind = GpuOpKind::Kernel;
  ops[4].start_ns = 5;
  ops[4].end_ns = 9;
  ops[5].kind = GpuOpKind::Memcpy;
  ops[5].start_ns = 7;
  EXPECT_EQ(count_untimed(ops), 3u);
  EXPECT_EQ(count_untimed({}), 0u);
}

}  // namespace
}  // namespace asynccheck::cupti
