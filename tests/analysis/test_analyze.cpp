// The analysis on fabricated event streams shaped like the GPU runs (timestamps in ns).
#include <gtest/gtest.h>

#include "analysis/analyze.h"

namespace asynccheck {
namespace {

using rules::ApiKind;
using rules::MemoryKind;
using rules::RuleId;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kUs = 1'000;

struct Builder {
  EventLog log;
  uint64_t next_corr = 1;
  Builder() { log.api_names = {"api"}; }

  ApiCall& call(ApiKind api, uint64_t start, uint64_t end, uint64_t stream = 0) {
    ApiCall c;
    c.correlation_id = next_corr++;
    c.start_ns = start;
    c.end_ns = end;
    c.call.api = api;
    c.stream = stream;
    log.calls.push_back(c);
    return log.calls.back();
  }
  ApiCall& copy(bool async, rules::CopyDirection dir, MemoryKind src, MemoryKind dst, uint64_t bytes, uint64_t start,
                uint64_t end, uint64_t stream = 0) {
    ApiCall& c = call(ApiKind::Copy, start, end, stream);
    c.call.async_form = async;
    c.call.direction = dir;
    c.call.src = src;
    c.call.dst = dst;
    c.call.bytes = bytes;
    return c;
  }
  void op(GpuOpKind kind, const ApiCall& c, uint64_t start, uint64_t end, uint32_t stream, uint8_t src_kind = 0,
          uint8_t dst_kind = 0) {
    GpuOp o;
    o.kind = kind;
    o.correlation_id = c.correlation_id;
    o.start_ns = start;
    o.end_ns = end;
    o.stream_id = stream;
    o.src_kind = src_kind;
    o.dst_kind = dst_kind;
    log.ops.push_back(o);
  }
  ApiCall& stream_create(uint64_t handle, uint32_t flags, uint64_t t) {
    ApiCall& c = call(ApiKind::StreamCreate, t, t + 10);
    c.handle = handle;
    c.flags = flags;
    return c;
  }
};

const Finding* find(const Analysis& a, RuleId rule) {
  for (const Finding& f : a.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

// Seed 000's answer with pageable memory: H2D staged (held the host), kernel, D2H waited for the kernel and its
// own copy.
TEST(Analyze, PageableCopiesAreDocumentedObservedWithTheirOwnWorkAsEvidence) {
  Builder b;
  const uint64_t s = 0x5000;
  b.stream_create(s, 1, 0);
  ApiCall& h2d = b.copy(true, rules::CopyDirection::Default, MemoryKind::Pageable, MemoryKind::Device, 256 << 20, 1 * kMs, 40 * kMs, s);
  b.op(GpuOpKind::Memcpy, h2d, 2 * kMs, 39 * kMs + 990'000, 13, 1, 3);
  ApiCall& k = b.call(ApiKind::KernelLaunch, 40 * kMs + 100, 40 * kMs + 5000, s);
  k.function = 0x1234;
  b.op(GpuOpKind::Kernel, k, 40 * kMs + 10'000, 60 * kMs, 13);
  ApiCall& d2h = b.copy(true, rules::CopyDirection::Default, MemoryKind::Device, MemoryKind::Pageable, 256 << 20, 40 * kMs + 6000, 70 * kMs, s);
  b.op(GpuOpKind::Memcpy, d2h, 60 * kMs + 2000, 69 * kMs + 995'000, 13, 3, 1);

  Analysis a = analyze(b.log, AnalysisOptions{});
  ASSERT_EQ(a.findings.size(), 2u);
  const Finding* up = find(a, RuleId::CopyAsyncPageableH2D);
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->verdict, Verdict::DocumentedObserved);
  EXPECT_EQ(up->held_ns, 39 * kMs);
  EXPECT_EQ(up->evidence.by, ReleasedBy::OwnWork);
  const Finding* down = find(a, RuleId::CopyAsyncPageableD2H);
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->evidence.by, ReleasedBy::OwnWork);
  EXPECT_EQ(down->evidence.gap_ns, 5000);
  ASSERT_GE(down->evidence.behind_op, 0);  // its copy started only when the kernel ended
  EXPECT_EQ(b.log.ops[static_cast<size_t>(down->evidence.behind_op)].kind, GpuOpKind::Kernel);
  // The launch was fast and is documented asynchronous: nothing reported for it.
  for (const Finding& f : a.findings) EXPECT_NE(b.log.calls[f.call].call.api, ApiKind::KernelLaunch);
}

TEST(Analyze, PinnedCopiesThatDidNotBlockAreSilent) {
  Builder b;
  ApiCall& h2d = b.copy(true, rules::CopyDirection::HostToDevice, MemoryKind::Pinned, MemoryKind::Device, 256 << 20, 0, 8000, 0x10);
  b.op(GpuOpKind::Memcpy, h2d, 9000, 20 * kMs, 13, 2, 3);
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.findings.empty());
  EXPECT_TRUE(a.not_observed.empty());
}

TEST(Analyze, DocumentedButNotObservedIsCountedNotReported) {
  Builder b;
  ApiCall& d2h = b.copy(true, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pageable, 1 << 20, 0, 50'000, 0x10);
  b.op(GpuOpKind::Memcpy, d2h, 1000, 45'000, 13, 3, 1);
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.findings.empty());
  EXPECT_EQ(a.not_observed[RuleId::CopyAsyncPageableD2H], 1u);
}

TEST(Analyze, ActivityRecordKindWinsAndTheDisagreementIsNoted) {
  Builder b;
  // We thought the host buffer was pageable; the driver says pinned (registered before we attached).
  ApiCall& d2h = b.copy(true, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pageable, 1 << 20, 0, 5 * kMs, 0x10);
  b.op(GpuOpKind::Memcpy, d2h, 1000, 5 * kMs - 1000, 13, 3, 2);
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_EQ(a.described[0].dst, MemoryKind::Pinned);
  EXPECT_EQ(a.kind_disagreements, 1u);
  ASSERT_EQ(a.findings.size(), 1u);  // a pinned async copy that held the host: observed but undocumented
  EXPECT_EQ(a.findings[0].verdict, Verdict::ObservedUndocumented);
  EXPECT_EQ(a.findings[0].predicted, RuleId::CopyAsyncPinned);
  EXPECT_NE(a.findings[0].note.find("pinned"), std::string::npos);
}

// A call no rule predicts to hold the host: reported from threshold_ns when GPU work explains the hold, but from
// own_cost_threshold_ns when nothing on the GPU does (its own cost, a slow call rather than a wait).
TEST(Analyze, UndocumentedOwnCostIsReportedOnlyFromTheOwnCostThreshold) {
  AnalysisOptions o;
  for (uint64_t held : {300 * kUs, o.own_cost_threshold_ns - 1, o.own_cost_threshold_ns}) {
    Builder b;
    ApiCall& s = b.call(ApiKind::StreamCreate, 0, held);
    s.handle = 0x7000;
    Analysis a = analyze(b.log, o);
    if (held < o.own_cost_threshold_ns) {
      EXPECT_TRUE(a.findings.empty()) << held;
    } else {
      ASSERT_EQ(a.findings.size(), 1u) << held;
      EXPECT_EQ(a.findings[0].rule, RuleId::UndocumentedBlock);
      EXPECT_EQ(a.findings[0].evidence.by, ReleasedBy::NothingOnGpu);
    }
  }
  // The same short hold, released by GPU work ending at its return: a wait, reported from threshold_ns.
  Builder b;
  ApiCall& h2d = b.copy(true, rules::CopyDirection::HostToDevice, MemoryKind::Pinned, MemoryKind::Device, 1 << 20, 0, 300 * kUs, 0x10);
  b.op(GpuOpKind::Memcpy, h2d, 1000, 300 * kUs - 2000, 13, 2, 3);
  Analysis a = analyze(b.log, o);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].rule, RuleId::UndocumentedBlock);
  EXPECT_EQ(a.findings[0].evidence.by, ReleasedBy::OwnWork);
}

TEST(Analyze, ContextCreationInsideTheFirstCallIsNotAFinding) {
  Builder b;
  ApiCall& m = b.call(ApiKind::DeviceAlloc, 0, 300 * kMs);
  m.call.bytes = 1 << 20;
  b.log.marks.push_back({MarkKind::ContextCreated, 100 * kMs, 0});
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.findings.empty());
  EXPECT_EQ(a.context_creation_ns, 300 * kMs);
}

TEST(Analyze, AllocationWithNoGpuWorkIsTheCallsOwnCost) {
  Builder b;
  ApiCall& m = b.call(ApiKind::PinnedAlloc, 0, 30 * kMs);
  m.call.bytes = 256 << 20;
  Analysis a = analyze(b.log, AnalysisOptions{});
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].rule, RuleId::PinnedAlloc);
  EXPECT_EQ(a.findings[0].evidence.by, ReleasedBy::NothingOnGpu);
}

TEST(Analyze, ThresholdIsConfigurable) {
  Builder b;
  b.call(ApiKind::PinnedAlloc, 0, 50'000);
  AnalysisOptions low;
  low.threshold_ns = 10'000;
  EXPECT_EQ(analyze(b.log, low).findings.size(), 1u);
  EXPECT_TRUE(analyze(b.log, AnalysisOptions{}).findings.empty());
}

// The k_1/k_2/k_3 example: k_1 in blocking stream s, k_2 in the legacy stream, k_3 in s. k_2 waits for k_1, k_3
// waits for k_2: 20 ms + 20 ms of GPU time lost.
Builder legacy_example(uint32_t stream_flags) {
  Builder b;
  const uint64_t s = 0x7000;
  b.stream_create(s, stream_flags, 0);
  ApiCall& k1 = b.call(ApiKind::KernelLaunch, 1000, 6000, s);
  ApiCall& k2 = b.call(ApiKind::KernelLaunch, 7000, 12000, 0);
  ApiCall& k3 = b.call(ApiKind::KernelLaunch, 13000, 18000, s);
  k1.function = 1;
  k2.function = 2;
  k3.function = 3;
  const bool blocking = stream_flags == 0;
  b.op(GpuOpKind::Kernel, k1, 10'000, 20 * kMs, 13);
  if (blocking) {
    b.op(GpuOpKind::Kernel, k2, 20 * kMs + 3000, 40 * kMs, 7);
    b.op(GpuOpKind::Kernel, k3, 40 * kMs + 3000, 60 * kMs, 13);
  } else {
    b.op(GpuOpKind::Kernel, k2, 15'000, 20 * kMs + 5000, 7);
    b.op(GpuOpKind::Kernel, k3, 20 * kMs + 3000, 40 * kMs, 13);
  }
  return b;
}

TEST(Analyze, LegacyStreamSerializationIsMeasuredFromActivityTimestamps) {
  Builder b = legacy_example(0);
  Analysis a = analyze(b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::LegacyStreamSerialization);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(b.log.calls[f->call].function, 2u);  // reported on k_2, the legacy-stream command
  // k_2 ready at 12 us, started at 20.003 ms; k_3 ready at 20 ms (after k_1), started at 40.003 ms.
  EXPECT_EQ(f->gpu_delay_ns, (20 * kMs + 3000 - 12000) + (40 * kMs + 3000 - 20 * kMs));
  EXPECT_EQ(a.findings.size(), 1u);
}

TEST(Analyze, NonBlockingStreamIsNotSerializedByTheLegacyStream) {
  Builder b = legacy_example(1);
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_EQ(find(a, RuleId::LegacyStreamSerialization), nullptr);
  EXPECT_TRUE(a.findings.empty());
}

TEST(Analyze, PerThreadDefaultStreamIsNotTheLegacyStream) {
  Builder b = legacy_example(0);
  for (ApiCall& c : b.log.calls) c.call.per_thread_variant = true;
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_EQ(find(a, RuleId::LegacyStreamSerialization), nullptr);
}

TEST(Analyze, FreeOfStreamOrderedPointerIsNotPredictedToBlock) {
  Builder b;
  ApiCall& m = b.call(ApiKind::StreamOrderedAlloc, 0, 1000, 0x10);
  m.handle = 0xabc;
  ApiCall& f = b.call(ApiKind::Free, 2000, 3000);
  f.handle = 0xabc;
  ApiCall& g = b.call(ApiKind::Free, 4000, 5000);
  g.handle = 0xdef;
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.described[1].stream_ordered_pointer);
  EXPECT_EQ(a.predicted[1].host_rule, RuleId::FreeStreamOrdered);
  EXPECT_EQ(a.predicted[2].host_rule, RuleId::FreeWaitsForDevice);
}

TEST(Analyze, FirstLaunchIsKnownPerFunction) {
  Builder b;
  b.call(ApiKind::KernelLaunch, 0, 10).function = 5;
  b.call(ApiKind::KernelLaunch, 20, 30).function = 5;
  b.call(ApiKind::KernelLaunch, 40, 50).function = 6;
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.described[0].first_launch);
  EXPECT_FALSE(a.described[1].first_launch);
  EXPECT_TRUE(a.described[2].first_launch);
}

TEST(Analyze, SyncWaitReleasedByOtherStreamWork) {
  Builder b;
  ApiCall& k = b.call(ApiKind::KernelLaunch, 0, 5000, 0x10);
  b.op(GpuOpKind::Kernel, k, 6000, 10 * kMs, 13);
  b.call(ApiKind::DeviceSynchronize, 6000, 10 * kMs + 4000);
  Analysis a = analyze(b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::DeviceSynchronize);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.by, ReleasedBy::OtherStreamWork);
  EXPECT_EQ(f->evidence.gap_ns, 4000);
  EXPECT_EQ(f->level, rules::Level::Note);
}

}  // namespace
}  // namespace asynccheck
