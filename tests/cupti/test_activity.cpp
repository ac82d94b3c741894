// The activity buffers' pool (cupti/activity.cpp): how many decoded buffers are kept for CUPTI's next requests.
#include <gtest/gtest.h>

#include "cupti/activity.h"

namespace asynccheck::cupti {
namespace {

TEST(ActivitySpares, FourOfTheDefaultSizeOrSmaller) {
  EXPECT_EQ(spare_slots(4 << 20), 4u);  // activity_buffer_kb's default
  EXPECT_EQ(spare_slots(64 << 10), 4u);  // its smallest
}

TEST(ActivitySpares, LargerBuffersKeepAtMostSixteenMiBButAlwaysOne) {
  EXPECT_EQ(spare_slots(8 << 20), 2u);
  EXPECT_EQ(spare_slots(12 << 20), 1u);
  EXPECT_EQ(spare_slots(16 << 20), 1u);
  EXPECT_EQ(spare_slots(size_t{256} << 20), 1u);  // its largest: one spare, not a gigabyte
}

}  // namespace
}  // namespace asynccheck::cupti
