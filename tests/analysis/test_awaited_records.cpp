// AwaitedRecords (analysis/awaited_records.h): which calls still wait for their work's activity record, however
// the records come: before their call, under the nested driver call's id, a graph's nodes one by one, never.
#include <gtest/gtest.h>

#include "analysis/awaited_records.h"

namespace asynccheck {
namespace {

using rules::ApiKind;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;

ApiCall call(ApiKind api, uint64_t id, uint64_t start, uint64_t bytes = 0) {
  ApiCall c;
  c.correlation_id = id;
  c.start_ns = start;
  c.end_ns = start + 5 * kUs;
  c.call.api = api;
  c.call.bytes = bytes;
  return c;
}

GpuOp record(uint64_t id, uint64_t start, uint64_t end, uint32_t stream = 13, GpuOpKind kind = GpuOpKind::Kernel) {
  GpuOp op;
  op.kind = kind;
  op.correlation_id = id;
  op.start_ns = start;
  op.end_ns = end;
  op.stream_id = stream;
  return op;
}

TEST(AwaitedRecords, OnlyCallsThatEnqueuedWorkWaitAndTheirRecordEndsTheWait) {
  AwaitedRecords w;
  ApiCall failed = call(ApiKind::KernelLaunch, 4, 400 * kUs);
  failed.result = 1;
  w.add_calls({call(ApiKind::KernelLaunch, 1, 100 * kUs), call(ApiKind::Copy, 2, 200 * kUs, 4096),
               call(ApiKind::Copy, 3, 300 * kUs, 0), failed, call(ApiKind::StreamSynchronize, 5, 500 * kUs),
               call(ApiKind::Memset, 6, 600 * kUs, 64)});
  EXPECT_EQ(w.awaited(), 3u);  // the launch, the copy of 4 KiB, the memset; not the empty copy, the failed launch
  EXPECT_EQ(w.before(1 * kMs, 0), 100 * kUs);
  // A synchronization record marks a wait: it ends nobody's.
  w.add_records({record(1, 110 * kUs, 120 * kUs), record(6, 0, 0, 13, GpuOpKind::Sync)});
  EXPECT_EQ(w.before(1 * kMs, 0), 200 * kUs);
  w.add_records({record(6, 0, 0, 13, GpuOpKind::Memset), record(2, 210 * kUs, 220 * kUs)});  // untimed still came
  EXPECT_EQ(w.before(1 * kMs, 0), 1 * kMs);
  EXPECT_EQ(w.awaited(), 0u);
  EXPECT_EQ(w.before(1 * kMs, 900 * kUs), 1 * kMs);
}

TEST(AwaitedRecords, ARecordMayComeBeforeItsCallOrUnderItsDriverCallsId) {
  AwaitedRecords w;
  // The launch was still in flight when the round took the calls; its kernel's record came in that round.
  w.add_records({record(10, 110 * kUs, 120 * kUs)});
  EXPECT_EQ(w.before(1 * kMs, 0), 1 * kMs);
  ApiCall nested = call(ApiKind::KernelLaunch, 11, 150 * kUs);
  nested.driver_correlation_id = 12;
  w.add_calls({call(ApiKind::KernelLaunch, 10, 100 * kUs), nested});
  EXPECT_EQ(w.awaited(), 1u);
  EXPECT_EQ(w.before(2 * kMs, 0), 150 * kUs);
  w.add_records({record(12, 160 * kUs, 170 * kUs)});  // the records of a runtime call may carry the driver's id
  EXPECT_EQ(w.before(2 * kMs, 0), 2 * kMs);
  // A record whose call never comes (work of a call we do not watch) is forgotten after some rounds.
  w.add_records({record(99, 200 * kUs, 300 * kUs)});
  for (int round = 0; round < 20; ++round) w.before(3 * kMs, 0);
  w.add_calls({call(ApiKind::KernelLaunch, 99, 190 * kUs)});
  EXPECT_EQ(w.awaited(), 1u) << "its record was forgotten: the call waits (overdue at most)";
}

TEST(AwaitedRecords, AGraphLaunchWaitsUntilLaterWorkInItsStreamEndedBeforeAForcedFlush) {
  AwaitedRecords w;
  w.add_calls({call(ApiKind::GraphLaunch, 20, 100 * kUs)});
  w.add_records({record(20, 200 * kUs, 250 * kUs, 7)});
  EXPECT_EQ(w.before(1 * kMs, 0), 100 * kUs) << "one node's record says nothing of the others";
  // An earlier-starting node on another stream: that stream is the graph's from now on.
  w.add_records({record(20, 150 * kUs, 900 * kUs, 8)});
  w.add_calls({call(ApiKind::KernelLaunch, 21, 300 * kUs)});
  w.add_records({record(21, 910 * kUs, 920 * kUs, 7)});  // later work, but in stream 7
  EXPECT_EQ(w.before(2 * kMs, 1 * kMs), 1 * kMs);
  EXPECT_EQ(w.awaited(), 1u);
  w.add_calls({call(ApiKind::KernelLaunch, 22, 400 * kUs)});
  w.add_records({record(22, 950 * kUs, 960 * kUs, 8)});  // later work in stream 8, ended before a forced flush
  EXPECT_EQ(w.before(2 * kMs, 955 * kUs), 955 * kUs) << "not before the forced flush: it had not ended by then";
  EXPECT_EQ(w.awaited(), 1u);
  EXPECT_EQ(w.before(2 * kMs, 1 * kMs), 2 * kMs);
  EXPECT_EQ(w.awaited(), 0u);
}

TEST(AwaitedRecords, ACallWhoseRecordNeverComesIsGivenUpOnTenSecondsAfterItReturned) {
  AwaitedRecords w;
  const ApiCall captured = call(ApiKind::KernelLaunch, 30, 1 * kMs);  // launched into a capture: no record, ever
  w.add_calls({captured, call(ApiKind::GraphLaunch, 31, 2 * kMs)});  // a graph whose records never come
  EXPECT_EQ(w.before(captured.end_ns + kRecordOverdueNs, 0), captured.start_ns);
  EXPECT_EQ(w.overdue(), 0u);
  EXPECT_EQ(w.before(captured.end_ns + kRecordOverdueNs + 1, 0), 2 * kMs);
  EXPECT_EQ(w.overdue(), 1u);
  const uint64_t late = 2 * kMs + 5 * kUs + kRecordOverdueNs + 1;
  EXPECT_EQ(w.before(late, 0), late);
  EXPECT_EQ(w.overdue(), 2u);
  EXPECT_EQ(w.awaited(), 0u);
}

}  // namespace
}  // namespace asynccheck
