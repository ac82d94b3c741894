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

TEST(AwaitedRecords, ACallWhoseRecordNeverComesIsGivenUpOnAForcedFlushTenSecondsAfterItReturned) {
  AwaitedRecords w;
  const ApiCall captured = call(ApiKind::KernelLaunch, 30, 1 * kMs);  // launched into a capture: no record, ever
  const ApiCall graph = call(ApiKind::GraphLaunch, 31, 2 * kMs);      // a graph whose records never come
  w.add_calls({captured, graph});
  const uint64_t first = captured.end_ns + kRecordOverdueNs + 1;
  EXPECT_EQ(w.before(first + 5 * kMs, 0), captured.start_ns) << "no forced flush since: a record may still come";
  EXPECT_EQ(w.before(first + 5 * kMs, first - 1), first - 1);
  EXPECT_EQ(w.overdue(), 0u);
  EXPECT_EQ(w.before(first + 5 * kMs, first), first);  // the graph still holds it; the launch is given up on
  EXPECT_EQ(w.overdue(), 1u);
  const uint64_t second = graph.end_ns + kRecordOverdueNs + 1;
  EXPECT_EQ(w.before(second + 5 * kMs, second), second + 5 * kMs);
  EXPECT_EQ(w.overdue(), 2u);
  EXPECT_EQ(w.awaited(), 0u);
}

// Which work came after a call of several records is read in host order: a call made after it returned enqueued
// behind it. Correlation ids are handed out as calls begin (another thread's call may begin first and enqueue
// later) and wrap at 2^32.
TEST(AwaitedRecords, LaterWorkIsReadInHostOrderNotByCorrelationId) {
  AwaitedRecords w;
  ApiCall other_thread = call(ApiKind::KernelLaunch, 41, 90 * kUs);  // began before the graph launch, a larger id
  other_thread.end_ns = 300 * kUs;                                   // ... and enqueued after it returned? unknown
  const ApiCall graph = call(ApiKind::GraphLaunch, 40, 100 * kUs);
  w.add_calls({other_thread, graph});
  w.add_records({record(40, 110 * kUs, 120 * kUs, 7)});
  w.add_records({record(41, 130 * kUs, 140 * kUs, 7)});  // larger id, same stream, ended before the forced flush
  EXPECT_EQ(w.before(1 * kMs, 500 * kUs), 500 * kUs);
  EXPECT_EQ(w.awaited(), 1u) << "a call that began before the graph launch returned proves nothing";
  // After the ids wrapped: a small id, but a call made after the launch returned.
  w.add_calls({call(ApiKind::KernelLaunch, 3, 200 * kUs)});
  w.add_records({record(3, 210 * kUs, 220 * kUs, 7)});
  EXPECT_EQ(w.before(1 * kMs, 500 * kUs), 1 * kMs);
  EXPECT_EQ(w.awaited(), 0u);
}

// A batch copy gets a record per copy (ApiCall::flags: how many): awaited like a graph launch.
TEST(AwaitedRecords, ABatchCopyWaitsForMoreThanItsFirstRecord) {
  AwaitedRecords w;
  ApiCall batch = call(ApiKind::Copy, 50, 100 * kUs, 3 * 4096);
  batch.flags = 3;
  w.add_calls({batch});
  w.add_records({record(50, 110 * kUs, 120 * kUs, 7, GpuOpKind::Memcpy)});
  EXPECT_EQ(w.before(1 * kMs, 0), 100 * kUs);
  w.add_calls({call(ApiKind::Memset, 51, 200 * kUs, 64)});
  w.add_records({record(51, 400 * kUs, 410 * kUs, 7, GpuOpKind::Memset)});  // behind the copies in its stream
  EXPECT_EQ(w.before(1 * kMs, 500 * kUs), 1 * kMs);
  EXPECT_EQ(w.awaited(), 0u);
}

// Records of streams where a call of several records moved away from, or that no such call waits in any more, are
// not kept: without a forced flush they would pile up for the rest of the run.
TEST(AwaitedRecords, WhatWaitsForAForcedFlushIsOnlyOfStreamsWithSuchACallAwaited) {
  AwaitedRecords w;
  w.add_calls({call(ApiKind::GraphLaunch, 60, 100 * kUs)});
  w.add_records({record(60, 200 * kUs, 250 * kUs, 7)});
  w.add_records({record(60, 150 * kUs, 900 * kUs, 8)});  // its first work is in stream 8 from now on
  for (uint64_t i = 0; i < 1000; ++i) {
    w.add_calls({call(ApiKind::KernelLaunch, 100 + i, 1 * kMs + i * kUs)});
    w.add_records({record(100 + i, 2 * kMs + i * kUs, 2 * kMs + i * kUs + 1, 7)});
  }
  EXPECT_EQ(w.tracked_records(), 0u) << "stream 7 has nothing of several records awaited";
  w.add_calls({call(ApiKind::KernelLaunch, 2000, 3 * kMs)});
  w.add_records({record(2000, 4 * kMs, 5 * kMs, 8)});
  EXPECT_EQ(w.tracked_records(), 1u);
  EXPECT_EQ(w.before(6 * kMs, 5 * kMs + 1), 6 * kMs);  // the graph ended: later work in stream 8 ended before the flush
  EXPECT_EQ(w.tracked_records(), 0u);
}

// Correlation ids wrap at 2^32: a call may come with the id of one still awaited. The older entry goes with what
// points at it (here a graph launch listed under its stream), and nothing is left behind for a later round to trip
// on (it runs on our thread inside the program: an exception there would end the program).
TEST(AwaitedRecords, AnIdSeenAgainReplacesTheOlderCallCleanly) {
  AwaitedRecords w;
  w.add_calls({call(ApiKind::GraphLaunch, 70, 100 * kUs)});
  w.add_records({record(70, 110 * kUs, 120 * kUs, 7)});
  w.add_calls({call(ApiKind::KernelLaunch, 70, 5 * kMs)});
  EXPECT_EQ(w.awaited(), 1u);
  w.add_calls({call(ApiKind::KernelLaunch, 71, 6 * kMs)});
  w.add_records({record(71, 6 * kMs + 10 * kUs, 6 * kMs + 20 * kUs, 7)});  // work in stream 7 again
  EXPECT_EQ(w.tracked_records(), 0u) << "no graph is awaited in stream 7 any more";
  EXPECT_EQ(w.before(7 * kMs, 0), 5 * kMs) << "the launch that took id 70 waits for its own record";
  w.add_records({record(70, 5 * kMs + 10 * kUs, 5 * kMs + 20 * kUs, 7)});
  EXPECT_EQ(w.before(8 * kMs, 0), 8 * kMs);
  EXPECT_EQ(w.awaited(), 0u);
}

}  // namespace
}  // namespace asynccheck
