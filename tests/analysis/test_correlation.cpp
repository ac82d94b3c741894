// CorrelationIndex (analysis/correlation.h): which call enqueued each GPU operation, as the analysis and the
// compaction both read it.
#include <gtest/gtest.h>

#include "analysis/correlation.h"

namespace asynccheck {
namespace {

ApiCall call(uint64_t corr, uint64_t driver_corr = 0) {
  ApiCall c;
  c.correlation_id = corr;
  c.driver_correlation_id = driver_corr;
  return c;
}

GpuOp op(uint64_t corr, GpuOpKind kind = GpuOpKind::Kernel) {
  GpuOp o;
  o.correlation_id = corr;
  o.kind = kind;
  return o;
}

TEST(CorrelationIndex, OwnAndNestedDriverIdsFindTheCallTheFirstCallWinsAndSyncRecordsAreOptional) {
  // Call 2's own id is call 0's nested driver id: the first call in the log's order owns it.
  const CallVector calls{call(5, 9), call(7), call(9)};
  const OpVector ops{op(5), op(9), op(7), op(42), op(7, GpuOpKind::Sync), op(9, GpuOpKind::Memcpy)};
  for (bool work_only : {true, false}) {
    const CorrelationIndex idx(calls, ops, work_only);
    EXPECT_EQ(idx.call_of(5), 0);
    EXPECT_EQ(idx.call_of(9), 0);
    EXPECT_EQ(idx.call_of(7), 1);
    EXPECT_EQ(idx.call_of(42), CorrelationIndex::kNone);
    EXPECT_EQ(idx.producer(3), CorrelationIndex::kNone);  // work of a call we do not watch
    EXPECT_EQ(idx.producer(4), 1);                        // a sync record has its call either way
    const auto a = idx.ops_of(0);
    EXPECT_EQ(std::vector<uint32_t>(a.begin(), a.end()), (std::vector<uint32_t>{0, 1, 5}));
    const auto b = idx.ops_of(1);
    const std::vector<uint32_t> expected = work_only ? std::vector<uint32_t>{2} : std::vector<uint32_t>{2, 4};
    EXPECT_EQ(std::vector<uint32_t>(b.begin(), b.end()), expected);
    EXPECT_TRUE(idx.ops_of(2).empty());
  }
}

TEST(CorrelationIndex, EmptyLogs) {
  const CorrelationIndex idx({}, {}, true);
  EXPECT_EQ(idx.call_of(1), CorrelationIndex::kNone);
  const CorrelationIndex no_calls({}, {op(3)}, false);
  EXPECT_EQ(no_calls.producer(0), CorrelationIndex::kNone);
}

}  // namespace
}  // namespace asynccheck
