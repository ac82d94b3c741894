// The analysis on fabricated event streams shaped like the GPU runs (timestamps in ns).
#include <gtest/gtest.h>

#include "analysis/analyze.h"
#include "analysis/streaming.h"
#include "log_builder.h"

namespace asynccheck {
namespace {

using rules::ApiKind;
using rules::MemoryKind;
using rules::RuleId;

using test_logs::Builder;
using test_logs::kMs;
using test_logs::kUs;

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
  ApiCall& h2d = b.copy(true, rules::CopyDirection::Default, MemoryKind::Pageable, MemoryKind::Device, 256 << 20,
                        1 * kMs, 40 * kMs, s);
  b.op(GpuOpKind::Memcpy, h2d, 2 * kMs, 39 * kMs + 990'000, 13, 1, 3);
  ApiCall& k = b.call(ApiKind::KernelLaunch, 40 * kMs + 100, 40 * kMs + 5000, s);
  k.function = 0x1234;
  b.op(GpuOpKind::Kernel, k, 40 * kMs + 10'000, 60 * kMs, 13);
  ApiCall& d2h = b.copy(true, rules::CopyDirection::Default, MemoryKind::Device, MemoryKind::Pageable, 256 << 20,
                        40 * kMs + 6000, 70 * kMs, s);
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

// capture_range=cudaProfilerApi (issue 21): only what runs between cudaProfilerStart and cudaProfilerStop is judged,
// as nsys's capture range, on every thread (the profiler is the process's); the rest, the bracket included, is
// counted. The same offline and live, where the calls come a step at a time and the range's state must carry over.
TEST(Analyze, ACaptureRangeJudgesOnlyTheCallsBetweenProfilerStartAndStop) {
  Builder b;
  b.call(ApiKind::DeviceAlloc, 0, 2 * kMs);  // start-up: 2 ms of its own, a cost finding without a range
  b.call(ApiKind::ProfilerStart, 3 * kMs, 3 * kMs + 10 * kUs);
  b.call(ApiKind::DeviceAlloc, 4 * kMs, 6 * kMs);                                     // the steady state
  b.call(ApiKind::DeviceAlloc, 4 * kMs + 500 * kUs, 6 * kMs + 500 * kUs).thread = 1;  // another thread, inside too
  b.call(ApiKind::ProfilerStop, 7 * kMs, 8 * kMs + 500 * kUs);  // 1.5 ms of its own: a finding without a range
  b.call(ApiKind::DeviceAlloc, 9 * kMs, 11 * kMs);              // tear-down
  b.log.run.threshold_ns = AnalysisOptions{}.threshold_ns;
  const Analysis all = analyze(b.log, analysis_options(b.log));
  EXPECT_EQ(all.findings.size(), 5u);
  EXPECT_EQ(all.outside_range_calls, 0u);
  b.log.run.capture_range = "cudaProfilerApi";
  const AnalysisOptions ranged = analysis_options(b.log);
  EXPECT_TRUE(ranged.profiler_range);
  const Analysis in_range = analyze(b.log, ranged);
  ASSERT_EQ(in_range.findings.size(), 2u);
  EXPECT_EQ(in_range.findings[0].call, 2u);
  EXPECT_EQ(in_range.findings[1].call, 3u);
  EXPECT_EQ(in_range.outside_range_calls, 4u);  // two allocations, cudaProfilerStart and cudaProfilerStop
  StreamingOptions so;
  so.analysis = ranged;
  so.margin_ns = 0;  // each step describes and judges what it can at once
  StreamingAnalysis live(so, b.log.run.env);
  uint64_t judged_in_steps = 0;
  for (size_t i = 0; i + 1 < b.log.calls.size(); ++i) {  // as the capture feeds it: a call, then up to the next one
    live.add({b.log.calls[i]}, {});
    live.advance(b.log.calls[i + 1].start_ns);
    judged_in_steps += live.judged_calls();  // this step's
  }
  EXPECT_GE(judged_in_steps, 4u);  // judged step by step, not all at the end
  live.add({b.log.calls.back()}, {});
  const StreamingAnalysis::Result r = live.finish();
  EXPECT_EQ(r.analysis.outside_range_calls, 4u);
  EXPECT_EQ(r.log.carried.outside_range_calls, 4u);
  ASSERT_EQ(r.analysis.findings.size(), 2u);
  EXPECT_EQ(r.log.calls[r.analysis.findings[0].call].start_ns, 4 * kMs);
}

// capture_range=nvtx:NAME: the calls whose recorded range is NAME or nested in it (a thread's own push, or a region
// of the whole process), in any domain unless one is named; the others are counted. Offline and step by step alike.
TEST(Analyze, AnNvtxCaptureRangeJudgesOnlyTheCallsInsideIt) {
  Builder b;
  // 1 "step" (default domain), 2 "forward" inside it, 3 "step" in domain "lib", 4 "other", 5 "forward" outside "step".
  b.log.nvtx_ranges = {{"", "step"}, {"", "forward", 1}, {"lib", "step"}, {"", "other"}, {"", "forward"}};
  b.call(ApiKind::DeviceAlloc, 0, 2 * kMs);                         // no range
  b.call(ApiKind::DeviceAlloc, 3 * kMs, 5 * kMs).nvtx_range = 1;    // in "step"
  b.call(ApiKind::DeviceAlloc, 6 * kMs, 8 * kMs).nvtx_range = 2;    // in "forward", in "step"
  b.call(ApiKind::DeviceAlloc, 9 * kMs, 11 * kMs).nvtx_range = 3;   // in "step" of domain "lib"
  b.call(ApiKind::DeviceAlloc, 12 * kMs, 14 * kMs).nvtx_range = 4;  // elsewhere
  b.call(ApiKind::DeviceAlloc, 15 * kMs, 17 * kMs).nvtx_range = 5;  // "forward", but not in "step"
  b.log.run.threshold_ns = AnalysisOptions{}.threshold_ns;
  auto judged = [&](const std::string& range) {
    b.log.run.capture_range = range;
    const Analysis a = analyze(b.log, analysis_options(b.log));
    std::vector<size_t> calls;
    for (const Finding& f : a.findings) calls.push_back(f.call);
    EXPECT_EQ(a.outside_range_calls, b.log.calls.size() - calls.size()) << range;
    return calls;
  };
  EXPECT_EQ(judged(""), (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(judged("nvtx:step"), (std::vector<size_t>{1, 2, 3}));
  EXPECT_EQ(judged("nvtx:step@lib"), (std::vector<size_t>{3}));
  EXPECT_EQ(judged("nvtx:forward"), (std::vector<size_t>{2, 5}));
  EXPECT_EQ(judged("nvtx:never"), (std::vector<size_t>{}));
  // Step by step, as the live analysis does: the same calls.
  b.log.run.capture_range = "nvtx:step";
  StreamingOptions so;
  so.analysis = analysis_options(b.log);
  so.margin_ns = 0;
  StreamingAnalysis live(so, b.log.run.env);
  for (size_t i = 0; i + 1 < b.log.calls.size(); ++i) {
    live.add({b.log.calls[i]}, {});
    live.advance(b.log.calls[i + 1].start_ns);
  }
  live.add({b.log.calls.back()}, {});
  const StreamingAnalysis::Result r = live.finish();
  EXPECT_EQ(r.analysis.outside_range_calls, 3u);
  ASSERT_EQ(r.analysis.findings.size(), 3u);
  EXPECT_EQ(r.log.calls[r.analysis.findings[0].call].start_ns, 3 * kMs);
}

TEST(CaptureRange, TheOptionsSpellings) {
  EXPECT_EQ(parse_capture_range("")->kind, CaptureRange::Kind::Every);
  EXPECT_EQ(parse_capture_range("cudaProfilerApi")->kind, CaptureRange::Kind::ProfilerApi);
  const auto any = parse_capture_range("nvtx:train step");
  ASSERT_TRUE(any);
  EXPECT_EQ(any->kind, CaptureRange::Kind::Nvtx);
  EXPECT_EQ(any->name, "train step");
  EXPECT_TRUE(any->any_domain);
  const auto lib = parse_capture_range("nvtx:a@b@mylib");  // the last '@' names the domain
  ASSERT_TRUE(lib);
  EXPECT_EQ(lib->name, "a@b");
  EXPECT_EQ(lib->domain, "mylib");
  EXPECT_FALSE(lib->any_domain);
  const auto star = parse_capture_range("nvtx:user@host@*");
  ASSERT_TRUE(star);
  EXPECT_EQ(star->name, "user@host");
  EXPECT_TRUE(star->any_domain);
  for (const char* bad : {"nvtx:", "nvtx:@lib", "nvtx:x@", "cudaprofilerapi", "nvtx", "NVTX:x", "range"})
    EXPECT_FALSE(parse_capture_range(bad)) << bad;
  EXPECT_EQ(capture_range_error("option 'capture_range'", "nvtx:"),
            "option 'capture_range': 'nvtx:' is not a capture range (valid: cudaProfilerApi, the calls between "
            "cudaProfilerStart and cudaProfilerStop; nvtx:NAME or nvtx:NAME@DOMAIN, the calls inside NVTX range NAME; "
            "empty: every call)");
}

TEST(CaptureRange, EachNodeIsLookedUpOnce) {
  const std::vector<NvtxRange> table = {{"", "step"}, {"", "a", 1}, {"", "b", 2}, {"", "c"}, {"", "d", 4}};
  std::vector<int> lookups(table.size() + 1);
  NvtxRangeMatch match(*parse_capture_range("nvtx:step"), [&](uint32_t id) {
    ++lookups[id];
    return table[id - 1];
  });
  EXPECT_TRUE(match.inside(3));
  EXPECT_TRUE(match.inside(2));
  EXPECT_TRUE(match.inside(1));
  EXPECT_FALSE(match.inside(5));
  EXPECT_FALSE(match.inside(4));
  EXPECT_FALSE(match.inside(0));
  EXPECT_EQ(lookups, (std::vector<int>{0, 1, 1, 1, 1, 1}));
  // A table whose parent is not a smaller id (only a hand-made one) ends the walk instead of looping.
  const std::vector<NvtxRange> loop = {{"", "x", 2}, {"", "y", 1}};
  NvtxRangeMatch looped(*parse_capture_range("nvtx:step"), [&](uint32_t id) { return loop[id - 1]; });
  EXPECT_FALSE(looped.inside(2));
}

TEST(Analyze, PinnedCopiesThatDidNotBlockAreSilent) {
  Builder b;
  ApiCall& h2d = b.copy(true, rules::CopyDirection::HostToDevice, MemoryKind::Pinned, MemoryKind::Device, 256 << 20, 0,
                        8000, 0x10);
  b.op(GpuOpKind::Memcpy, h2d, 9000, 20 * kMs, 13, 2, 3);
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.findings.empty());
  EXPECT_TRUE(a.not_observed.empty());
}

TEST(Analyze, DocumentedButNotObservedIsCountedNotReported) {
  Builder b;
  ApiCall& d2h = b.copy(true, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pageable, 1 << 20, 0,
                        50'000, 0x10);
  b.op(GpuOpKind::Memcpy, d2h, 1000, 45'000, 13, 3, 1);
  Analysis a = analyze(b.log, AnalysisOptions{});
  ASSERT_EQ(a.findings.size(), 1u);  // kept for its site's total only: it waited 45 us, under the threshold
  EXPECT_TRUE(a.findings[0].below_threshold);
  EXPECT_EQ(a.findings[0].waited_ns, 45'000u);
  EXPECT_EQ(a.not_observed[RuleId::CopyAsyncPageableD2H], 1u);
}

TEST(Analyze, ActivityRecordKindWinsAndTheDisagreementIsNoted) {
  Builder b;
  // We thought the host buffer was pageable; the driver says pinned (registered before we attached).
  ApiCall& d2h = b.copy(true, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pageable, 1 << 20, 0,
                        5 * kMs, 0x10);
  b.op(GpuOpKind::Memcpy, d2h, 1000, 5 * kMs - 1000, 13, 3, 2);
  Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_EQ(a.described[0].dst, MemoryKind::Pinned);
  EXPECT_EQ(a.kind_disagreements, 1u);
  ASSERT_EQ(a.findings.size(), 1u);  // a pinned async copy that held the host: observed but undocumented
  EXPECT_EQ(a.findings[0].verdict, Verdict::ObservedUndocumented);
  EXPECT_EQ(a.findings[0].predicted, RuleId::CopyAsyncPinned);
  EXPECT_NE(a.findings[0].note.find("pinned"), std::string::npos);
}

// A call no rule predicts to hold the host, which waited for no GPU work: its own cost, reported as a cost (level
// note) from cost_threshold_ns, never under a synchronization title.
TEST(Analyze, UndocumentedOwnCostIsACostFindingFromTheCostThreshold) {
  AnalysisOptions o;
  for (uint64_t held : {300 * kUs, o.cost_threshold_ns - 1, o.cost_threshold_ns}) {
    Builder b;
    ApiCall& s = b.call(ApiKind::StreamCreate, 0, held);
    s.handle = 0x7000;
    Analysis a = analyze(b.log, o);
    if (held < o.cost_threshold_ns) {
      EXPECT_TRUE(a.findings.empty()) << held;
    } else {
      ASSERT_EQ(a.findings.size(), 1u) << held;
      EXPECT_EQ(a.findings[0].rule, RuleId::CostCall);
      EXPECT_EQ(a.findings[0].level, rules::Level::Note);
      EXPECT_EQ(a.findings[0].verdict, Verdict::OwnCost);
      EXPECT_EQ(a.findings[0].evidence.by, ReleasedBy::NothingOnGpu);
      EXPECT_EQ(a.findings[0].waited_ns, 0u);
      EXPECT_EQ(a.findings[0].own_ns, held);
    }
  }
  // A short hold that waited for its own copy: a wait, reported from threshold_ns.
  Builder b;
  ApiCall& h2d = b.copy(true, rules::CopyDirection::HostToDevice, MemoryKind::Pinned, MemoryKind::Device, 1 << 20, 0,
                        300 * kUs, 0x10);
  b.op(GpuOpKind::Memcpy, h2d, 1000, 300 * kUs - 2000, 13, 2, 3);
  Analysis a = analyze(b.log, o);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].rule, RuleId::UndocumentedBlock);
  EXPECT_EQ(a.findings[0].evidence.by, ReleasedBy::OwnWork);
  EXPECT_EQ(a.findings[0].waited_ns, 300 * kUs - 2000);
  EXPECT_EQ(a.findings[0].own_ns, 2000u);
}

// A launch no rule says waits, held by a full queue: it waited for one slot, freed by the last kernel of its stream
// that ended by its return. The next kernel, ending within the clock skew allowed after the return (gpu_gap_ns), was
// still running behind it: named before, it said the launch waited for work that ended after it returned. Work of
// another stream that ended by the return comes only when its own stream has none; work that began after the return
// is never named, by any call. A call that waits for its whole stream by rule names the last work of its stream, as
// before.
TEST(Analyze, ALaunchHeldByAFullQueueNamesTheKernelThatEndedByItsReturn) {
  Builder b;
  b.stream_create(0x7000, 1, 0);
  b.stream_create(0x8000, 1, 0);
  std::vector<size_t> k;
  for (uint64_t i = 0; i < 5; ++i)  // queued at once, run back to back: [100, 112), [112, 124), ... us
    k.push_back(b.kernel(0x7000, 13, (1 + i) * kUs, (100 + 12 * i) * kUs, (112 + 12 * i) * kUs, 0x42));
  b.kernel(0x8000, 14, 6 * kUs, 120 * kUs, 137 * kUs, 0x42);  // another stream's, ending after k[2], by the return
  b.kernel(0x7000, 13, 20 * kUs, 160 * kUs, 172 * kUs, 0x42);
  b.log.calls.back().end_ns = 138 * kUs;  // held 118 us, until the third kernel's end freed a slot (136 us)
  const Analysis a = analyze(b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::UndocumentedBlock);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.op, static_cast<int64_t>(k[2]));  // not k[3], which ended 10 us after the return
  EXPECT_EQ(f->evidence.by, ReleasedBy::EarlierWorkSameStream);
  EXPECT_EQ(f->evidence.gap_ns, 2 * kUs);
  EXPECT_EQ(f->waited_ns, 116 * kUs);
  EXPECT_EQ(f->own_ns, 2 * kUs);

  // Nothing ended within the skew before its return: the last work that ended within it after, if it had begun by
  // then; work queued behind (begun after the return) let nothing go.
  Builder late;
  late.stream_create(0x7000, 1, 0);
  const size_t running = late.kernel(0x7000, 13, 1 * kUs, 100 * kUs, 140 * kUs, 0x42);  // running at the return
  late.kernel(0x7000, 13, 2 * kUs, 140 * kUs, 141 * kUs, 0x42);                         // began after it
  late.kernel(0x7000, 13, 20 * kUs, 160 * kUs, 172 * kUs, 0x42);
  late.log.calls.back().end_ns = 139 * kUs;
  const Analysis l = analyze(late.log, AnalysisOptions{});
  const Finding* g = find(l, RuleId::UndocumentedBlock);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->evidence.op, static_cast<int64_t>(running));

  Builder sync;
  sync.stream_create(0x7000, 1, 0);
  const size_t last = sync.kernel(0x7000, 13, 1 * kUs, 100 * kUs, 148 * kUs, 0x42);
  sync.call(ApiKind::StreamSynchronize, 20 * kUs, 138 * kUs, 0x7000);
  const Analysis s = analyze(sync.log, AnalysisOptions{});
  const Finding* w = find(s, RuleId::StreamSynchronize);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->evidence.op, static_cast<int64_t>(last));
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

// The rule says pinning may synchronize; it waited for nothing: a cost finding (note), counted as not observed
// under its rule, never an "implicit synchronization point" warning.
TEST(Analyze, AllocationWithNoGpuWorkIsTheCallsOwnCost) {
  Builder b;
  ApiCall& m = b.call(ApiKind::PinnedAlloc, 0, 30 * kMs);
  m.call.bytes = 256 << 20;
  Analysis a = analyze(b.log, AnalysisOptions{});
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].rule, RuleId::CostAllocation);
  EXPECT_EQ(a.findings[0].level, rules::Level::Note);
  EXPECT_EQ(a.findings[0].evidence.by, ReleasedBy::NothingOnGpu);
  EXPECT_EQ(a.findings[0].own_ns, 30 * kMs);
  EXPECT_EQ(a.not_observed[RuleId::PinnedAlloc], 1u);
  // Under the cost threshold: nothing reported at all.
  Builder quick;
  quick.call(ApiKind::PinnedAlloc, 0, 300 * kUs).call.bytes = 256 << 20;
  EXPECT_TRUE(analyze(quick.log, AnalysisOptions{}).findings.empty());
}

// The threshold applies to the waited time: a cudaFree that waited 50 us for a kernel is reported only when the
// threshold is below 50 us.
TEST(Analyze, ThresholdIsConfigurable) {
  Builder b;
  ApiCall& k = b.call(ApiKind::KernelLaunch, 0, 5000, 0x10);
  k.function = 1;
  b.op(GpuOpKind::Kernel, k, 6000, 60'000, 13);
  b.call(ApiKind::Free, 10'000, 62'000).handle = 0x9000;
  AnalysisOptions low;
  low.threshold_ns = 10'000;
  const Analysis a = analyze(b.log, low);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].rule, RuleId::FreeWaitsForDevice);
  EXPECT_EQ(a.findings[0].waited_ns, 50'000u);
  EXPECT_FALSE(a.findings[0].below_threshold);
  const Analysis d = analyze(b.log, AnalysisOptions{});
  ASSERT_EQ(d.findings.size(), 1u);  // kept, below the threshold, for its site's total
  EXPECT_TRUE(d.findings[0].below_threshold);
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

// simpleHyperQ's end (corpus/cuda-samples): a kernel in a blocking stream (CUPTI stream 13, 20 ms), a kernel on the
// legacy stream (7) that could only start when it ended, then a synchronous copy on the legacy stream. The copy's
// transfer waited for the legacy kernel, which waited for the blocking stream's: the wait is named by that kernel,
// not by the 1.5 us one of its own stream. With `legacy_kernel` false the copy follows the blocking kernel directly:
// the time before its transfer was a wait for it too, not the call's own cost. `stream_flags` 1: a non-blocking
// stream, which the legacy stream does not wait for.
struct LegacyCopy {
  Builder b;
  size_t blocking_op = 0;
};
LegacyCopy legacy_copy(bool legacy_kernel, uint32_t stream_flags = 0, bool sync_instead = false) {
  LegacyCopy x;
  Builder& b = x.b;
  const uint64_t s = 0x7000;
  b.stream_create(s, stream_flags, 0);
  b.call(ApiKind::KernelLaunch, 1000, 6000, s).function = 1;
  x.blocking_op = b.op(GpuOpKind::Kernel, b.log.calls.back(), 10'000, 20 * kMs, 13);
  const uint64_t ready = 20 * kMs + 3000;  // when the legacy stream's work could start
  uint64_t copy_at = ready;
  if (legacy_kernel) {
    b.call(ApiKind::KernelLaunch, 7000, 12000, 0).function = 2;
    b.op(GpuOpKind::Kernel, b.log.calls.back(), ready, ready + 1500, 7);
    copy_at = ready + 1500 + 500;
  }
  if (sync_instead) {  // cudaStreamSynchronize(0) where the copy was
    b.call(ApiKind::StreamSynchronize, 13000, copy_at + 9000, 0);
    return x;
  }
  b.copy(false, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pinned, 8, 13000, copy_at + 9000);
  b.op(GpuOpKind::Memcpy, b.log.calls.back(), copy_at, copy_at + 2000, 7, 3, 2);
  return x;
}

// The same with cudaStreamSynchronize(0) after the legacy kernel: it waited for that kernel, which ended last, and
// the evidence says what the kernel began only after.
TEST(Analyze, AStreamSyncBehindALegacyKernelSaysWhatThatKernelWaitedFor) {
  LegacyCopy x = legacy_copy(true, 0, true);
  Analysis a = analyze(x.b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::StreamSynchronize);
  ASSERT_NE(f, nullptr);
  const ApiCall& c = x.b.log.calls[f->call];
  ASSERT_GE(f->evidence.op, 0);
  const GpuOp& sum = x.b.log.ops[static_cast<size_t>(f->evidence.op)];
  EXPECT_EQ(sum.stream_id, 7u);  // the legacy kernel, which ended last
  EXPECT_EQ(f->evidence.by, ReleasedBy::EarlierWorkSameStream);
  EXPECT_EQ(f->evidence.behind_op, static_cast<int64_t>(x.blocking_op));
  EXPECT_EQ(f->waited_ns, sum.end_ns - c.start_ns);
  // On a non-blocking stream the legacy kernel waited for nothing there: no such claim.
  LegacyCopy y = legacy_copy(true, 1, true);
  Analysis b = analyze(y.b.log, AnalysisOptions{});
  const Finding* g = find(b, RuleId::StreamSynchronize);
  ASSERT_NE(g, nullptr);
  EXPECT_LT(g->evidence.behind_op, 0);
}

TEST(Analyze, ACopyBehindALegacyKernelNamesTheBlockingStreamWorkThatKernelWaitedFor) {
  for (const bool legacy_kernel : {true, false}) {
    SCOPED_TRACE(legacy_kernel);
    LegacyCopy x = legacy_copy(legacy_kernel);
    Analysis a = analyze(x.b.log, AnalysisOptions{});
    const Finding* f = find(a, RuleId::CopySyncD2H);
    ASSERT_NE(f, nullptr);
    const ApiCall& c = x.b.log.calls[f->call];
    const GpuOp& own = x.b.log.ops.back();
    EXPECT_EQ(f->evidence.by, ReleasedBy::OwnWork);
    EXPECT_EQ(f->evidence.behind_op, static_cast<int64_t>(x.blocking_op));
    EXPECT_EQ(f->waited_ns, own.end_ns - c.start_ns);  // from its start: it waited all along
    EXPECT_EQ(f->own_ns, c.end_ns - own.end_ns);
  }
}

TEST(Analyze, ACopyOnTheLegacyStreamDoesNotWaitForANonBlockingStream) {
  LegacyCopy x = legacy_copy(false, 1);
  Analysis a = analyze(x.b.log, AnalysisOptions{});
  const ApiCall& c = x.b.log.calls.back();
  const GpuOp& own = x.b.log.ops.back();
  // Only its transfer was a wait: the non-blocking stream's kernel ended just before it began by coincidence.
  const Finding* any = nullptr;
  for (const Finding& g : a.findings) {
    if (&x.b.log.calls[g.call] == &c) any = &g;
  }
  ASSERT_NE(any, nullptr);  // 20 ms of its own: a cost finding
  EXPECT_EQ(any->waited_ns, own.end_ns - own.start_ns);
  EXPECT_LT(any->evidence.behind_op, 0);
}

// The review's cases (82427dd). A copy on the legacy stream behind 30 ms of legacy kernels, the first of which
// waited 50 us for a blocking stream's kernel: the copy waited for its stream's kernels, not for that kernel.
TEST(Analyze, ACopyBehindItsStreamsLongQueueNamesItsStreamsWork) {
  Builder b;
  b.stream_create(0x7000, 0, 0);
  b.call(ApiKind::KernelLaunch, 1000, 6000, 0x7000);
  const size_t x = b.op(GpuOpKind::Kernel, b.log.calls.back(), 26 * kUs, 150 * kUs, 13);
  size_t last = 0;
  for (int k = 0; k < 3; ++k) {
    b.call(ApiKind::KernelLaunch, 7000 + 1000 * k, 7500 + 1000 * k, 0);
    last = b.op(GpuOpKind::Kernel, b.log.calls.back(), 150 * kUs + 10 * kMs * k, 150 * kUs + 10 * kMs * (k + 1), 7);
  }
  b.copy(false, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pinned, 8, 100 * kUs, 31 * kMs);
  b.op(GpuOpKind::Memcpy, b.log.calls.back(), 30 * kMs + 152 * kUs, 30 * kMs + 154 * kUs, 7, 3, 2);
  Analysis a = analyze(b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::CopySyncD2H);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.behind_op, static_cast<int64_t>(last));
  EXPECT_NE(f->evidence.behind_op, static_cast<int64_t>(x));
}

// A blocking stream's transfer behind work on the legacy stream enqueued before it: the reverse direction.
TEST(Analyze, ABlockingStreamsTransferNamesTheLegacyWorkItWaitedFor) {
  Builder b;
  b.stream_create(0x7000, 0, 0);
  b.call(ApiKind::KernelLaunch, 1000, 6000, 0);
  const size_t legacy = b.op(GpuOpKind::Kernel, b.log.calls.back(), 10 * kUs, 20 * kMs, 7);
  b.copy(true, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pageable, 1 << 20, 13000,
         20 * kMs + 9000, 0x7000);
  b.op(GpuOpKind::Memcpy, b.log.calls.back(), 20 * kMs + 3000, 20 * kMs + 5000, 13, 3, 1);
  Analysis a = analyze(b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::CopyAsyncPageableD2H);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.behind_op, static_cast<int64_t>(legacy));
  EXPECT_EQ(f->waited_ns, 20 * kMs + 5000 - 13000);
}

// No link to work the transfer was not shown to wait for: work of another thread enqueued after the copy began, work
// in another context, or work of a stream whose kind is not known (created before we attached: it may be
// non-blocking). (Only the transfer then counts as waited; where such work did hold it, that time reads as its own
// cost: docs/report-format.md says so.)
TEST(Analyze, ATransferIsNotLinkedToWorkEnqueuedAfterItOrInAnotherContextOrOfAnUnknownStream) {
  for (const int variant : {0, 1, 2}) {
    SCOPED_TRACE(variant);
    const bool other_context = variant == 1;
    Builder b;
    if (variant != 2) b.stream_create(0x7000, 0, 0);
    const uint64_t launched = variant == 0 ? 200 * kUs : 1000;  // the copy began at 100 us
    ApiCall& k = b.call(ApiKind::KernelLaunch, launched, launched + 5000, 0x7000);
    k.thread = 1;
    const size_t kernel = b.op(GpuOpKind::Kernel, b.log.calls.back(), 210 * kUs, 10 * kMs, 13);
    if (other_context) b.log.ops[kernel].context = 2;
    b.copy(false, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pinned, 8, 100 * kUs,
           10 * kMs + 200 * kUs);
    b.op(GpuOpKind::Memcpy, b.log.calls.back(), 10 * kMs + 5000, 10 * kMs + 7000, 7, 3, 2);
    Analysis a = analyze(b.log, AnalysisOptions{});
    size_t copies = 0;
    for (const Finding& f : a.findings) {
      if (b.log.calls[f.call].call.api != ApiKind::Copy) continue;
      ++copies;
      EXPECT_LT(f.evidence.behind_op, 0);
    }
    EXPECT_EQ(copies, 1u);
  }
}

// The second review's cases (126d942). (a) Work of another stream that itself waited for the copy's stream: K0 on
// the legacy stream (20 ms), then x on a blocking stream (10 us, enqueued after K0: it waited for K0), then K1 on the
// legacy stream (5 ms), then the copy. The wait was K0's and K1's, not x's; without K1, K0's through x.
// (b) A queue longer than a few links: 100 legacy kernels of 2 us behind a 60 ms kernel of a blocking stream.
TEST(Analyze, WhatHeldUpACopyIsWhatTookMostOfItsWait) {
  for (const bool with_k1 : {true, false}) {
    SCOPED_TRACE(with_k1);
    Builder b;
    b.stream_create(0x7000, 0, 0);
    b.call(ApiKind::KernelLaunch, 1000, 2000, 0);
    const size_t k0 = b.op(GpuOpKind::Kernel, b.log.calls.back(), 10 * kUs, 20 * kMs, 7);
    b.call(ApiKind::KernelLaunch, 3000, 4000, 0x7000);
    b.op(GpuOpKind::Kernel, b.log.calls.back(), 20 * kMs + 1000, 20 * kMs + 11000, 13);
    uint64_t copy_at = 20 * kMs + 12000;
    size_t k1 = 0;
    if (with_k1) {
      b.call(ApiKind::KernelLaunch, 5000, 6000, 0);
      k1 = b.op(GpuOpKind::Kernel, b.log.calls.back(), 20 * kMs + 12000, 25 * kMs, 7);
      copy_at = 25 * kMs + 1000;
    }
    b.copy(false, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pinned, 8, 100 * kUs,
           copy_at + 9000);
    b.op(GpuOpKind::Memcpy, b.log.calls.back(), copy_at, copy_at + 2000, 7, 3, 2);
    Analysis a = analyze(b.log, AnalysisOptions{});
    const Finding* f = find(a, RuleId::CopySyncD2H);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->evidence.behind_op, static_cast<int64_t>(with_k1 ? k1 : k0));
  }
  Builder b;
  b.stream_create(0x7000, 0, 0);
  b.call(ApiKind::KernelLaunch, 1000, 2000, 0x7000);
  const size_t long_kernel = b.op(GpuOpKind::Kernel, b.log.calls.back(), 10 * kUs, 60 * kMs, 13);
  uint64_t t = 60 * kMs + 1000;
  for (int k = 0; k < 100; ++k, t += 2000) {
    b.call(ApiKind::KernelLaunch, 3000 + 100 * k, 3050 + 100 * k, 0);
    b.op(GpuOpKind::Kernel, b.log.calls.back(), t, t + 2000, 7);
  }
  b.copy(false, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pinned, 8, 100 * kUs, t + 9000);
  b.op(GpuOpKind::Memcpy, b.log.calls.back(), t, t + 2000, 7, 3, 2);
  Analysis a = analyze(b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::CopySyncD2H);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.behind_op, static_cast<int64_t>(long_kernel));
}

// The third review's cases (e222ffd). A chain across streams names the link that ran longest on the side that held
// the copy longer, not the first link of that side: (S1) B0 on a blocking stream (20 ms), legacy K (20 ms), B1 on
// another blocking stream (10 us), then the copy: B0, not B1; (S3) K0 legacy (0.19 ms), B blocking (20 ms), K1 legacy
// (10 us), then the copy: B, not K1. (S5) Idle time no link explains holds nobody: a 10 us blocking kernel that
// began at 20 ms with nothing before it, then a 10 ms legacy kernel, then the copy: the legacy kernel.
TEST(Analyze, AChainAcrossStreamsNamesTheLinkThatRanLongest) {
  struct Op {
    uint64_t stream_handle;  // 0: legacy
    uint32_t cupti_stream;
    uint64_t start, end;
  };
  auto run = [](const std::vector<Op>& ops, size_t expected) {
    Builder b;
    b.stream_create(0x7000, 0, 0);
    b.stream_create(0x7100, 0, 0);
    std::vector<size_t> index;
    uint64_t t = 1000;
    for (const Op& o : ops) {
      b.call(ApiKind::KernelLaunch, t, t + 500, o.stream_handle);
      index.push_back(b.op(GpuOpKind::Kernel, b.log.calls.back(), o.start, o.end, o.cupti_stream));
      t += 1000;
    }
    const uint64_t at = ops.back().end + 1000;
    b.copy(false, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pinned, 8, 100 * kUs, at + 9000);
    b.op(GpuOpKind::Memcpy, b.log.calls.back(), at, at + 2000, 7, 3, 2);
    Analysis a = analyze(b.log, AnalysisOptions{});
    const Finding* f = find(a, RuleId::CopySyncD2H);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->evidence.behind_op, static_cast<int64_t>(index[expected]));
  };
  {
    SCOPED_TRACE("S1");
    run({{0x7000, 13, 10 * kUs, 20 * kMs + 200 * kUs},
         {0, 7, 20 * kMs + 201 * kUs, 40 * kMs + 200 * kUs},
         {0x7100, 15, 40 * kMs + 201 * kUs, 40 * kMs + 211 * kUs}},
        0);
  }
  {
    SCOPED_TRACE("S3");
    run({{0, 7, 10 * kUs, 290 * kUs},
         {0x7000, 13, 291 * kUs, 20 * kMs + 291 * kUs},
         {0, 7, 20 * kMs + 292 * kUs, 20 * kMs + 302 * kUs}},
        1);
  }
  {
    SCOPED_TRACE("S5");
    run({{0x7000, 13, 20 * kMs, 20 * kMs + 10 * kUs}, {0, 7, 20 * kMs + 11 * kUs, 30 * kMs + 11 * kUs}}, 1);
  }
}

// cudaStreamSynchronize(0) behind legacy kernels that held it longer than the blocking stream's kernel between them:
// K0 legacy (20 ms), x blocking (10 us), K1 legacy (5 ms): its evidence names K1 and nothing it began after.
TEST(Analyze, AStreamSyncWhoseOwnStreamHeldItLongerNamesNoOtherStream) {
  Builder b;
  b.stream_create(0x7000, 0, 0);
  b.call(ApiKind::KernelLaunch, 1000, 2000, 0);
  b.op(GpuOpKind::Kernel, b.log.calls.back(), 10 * kUs, 20 * kMs, 7);
  b.call(ApiKind::KernelLaunch, 3000, 4000, 0x7000);
  b.op(GpuOpKind::Kernel, b.log.calls.back(), 20 * kMs + 1000, 20 * kMs + 11000, 13);
  b.call(ApiKind::KernelLaunch, 5000, 6000, 0);
  const size_t k1 = b.op(GpuOpKind::Kernel, b.log.calls.back(), 20 * kMs + 12000, 25 * kMs, 7);
  b.call(ApiKind::StreamSynchronize, 100 * kUs, 25 * kMs + 9000, 0);
  Analysis a = analyze(b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::StreamSynchronize);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.op, static_cast<int64_t>(k1));
  EXPECT_EQ(f->evidence.by, ReleasedBy::EarlierWorkSameStream);
  EXPECT_LT(f->evidence.behind_op, 0);
}

// The bound on the chain (kMaxLinks, 4096 links): a longer queue of short kernels is judged by the links followed,
// and work beyond them is not credited to the last one followed.
TEST(Analyze, AQueueLongerThanTheChainsBoundIsJudgedByTheLinksFollowed) {
  Builder b;
  b.stream_create(0x7000, 0, 0);
  b.call(ApiKind::KernelLaunch, 1000, 2000, 0x7000);
  b.op(GpuOpKind::Kernel, b.log.calls.back(), 10 * kUs, 60 * kMs, 13);
  uint64_t t = 60 * kMs + 1000;
  size_t last = 0;
  for (int k = 0; k < 4097; ++k, t += 2000) {
    b.call(ApiKind::KernelLaunch, 3000 + 10 * k, 3005 + 10 * k, 0);
    last = b.op(GpuOpKind::Kernel, b.log.calls.back(), t, t + 2000, 7);
  }
  b.copy(false, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pinned, 8, 100 * kUs, t + 9000);
  b.op(GpuOpKind::Memcpy, b.log.calls.back(), t, t + 2000, 7, 3, 2);
  Analysis a = analyze(b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::CopySyncD2H);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.behind_op, static_cast<int64_t>(last));  // its stream's, the first link
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

// Work CUPTI delivered without timestamps (start and end 0: its device buffers ran out, cupti/activity.cpp) proves
// nothing: no evidence is made up from the untimed kernel, and no wait is measured (the call's time is reported as
// what was measured: its own, a note). Counting all of it as waited for any untimed work before it kept every such
// record, and every call after it, in the compacted log (review of issue 19).
TEST(Analyze, UntimedWorkIsNeverEvidence) {
  Builder b;
  ApiCall& k = b.call(ApiKind::KernelLaunch, 0, 5000, 0x10);
  b.op(GpuOpKind::Kernel, k, 0, 0, 13);
  b.call(ApiKind::DeviceSynchronize, 6000, 10 * kMs + 4000);
  Analysis a = analyze(b.log, AnalysisOptions{});
  const Finding* f = find(a, RuleId::CostCall);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->held_ns, 10 * kMs - 2000);
  EXPECT_EQ(f->level, rules::Level::Note);
  EXPECT_EQ(f->evidence.by, ReleasedBy::NothingOnGpu);  // untimed work proves nothing: no wait is measured
  EXPECT_EQ(f->waited_ns, 0u);
  EXPECT_EQ(f->evidence.op, -1);
}

// ---- CUDA graphs: stream capture and graph launches ----

constexpr int32_t kCaptureUnsupported = 900;  // cudaErrorStreamCaptureUnsupported
constexpr int32_t kCaptureImplicit = 906;     // cudaErrorStreamCaptureImplicit (the legacy stream during capture)
constexpr int32_t kCaptureWrongThread = 908;  // cudaErrorStreamCaptureWrongThread

ApiCall& capture_begin(Builder& b, uint64_t stream, uint64_t t, uint32_t mode = 0) {
  ApiCall& c = b.call(ApiKind::CaptureBegin, t, t + 5 * kUs, stream);
  c.flags = mode;
  return c;
}
ApiCall& capture_end(Builder& b, uint64_t stream, uint64_t t) {
  ApiCall& c = b.call(ApiKind::CaptureEnd, t, t + 20 * kUs, stream);
  c.handle = 0x9a0;  // the graph made
  return c;
}
ApiCall& event_call(Builder& b, ApiKind api, uint64_t stream, uint64_t event, uint64_t t) {
  ApiCall& c = b.call(api, t, t + 3 * kUs, stream);
  c.handle = event;
  return c;
}

// In capture, a large pageable copy, a memset and a launch that held the host are recorded, not executed: none is
// judged (nor counted as documented-but-not-observed). After the capture ends, the same copy is judged as usual.
TEST(AnalyzeCapture, CapturedCallsAreCountedNotJudgedAndTheEndRestoresJudging) {
  Builder b;
  const uint64_t s = 0x5000;
  b.stream_create(s, 0, 0);  // blocking
  capture_begin(b, s, 1 * kMs);
  b.copy(true, rules::CopyDirection::HostToDevice, MemoryKind::Pageable, MemoryKind::Device, 32 << 20, 2 * kMs, 5 * kMs,
         s);
  ApiCall& m = b.call(ApiKind::Memset, 5 * kMs + 10 * kUs, 5 * kMs + 15 * kUs, s);
  m.call.async_form = true;
  m.call.bytes = 32 << 20;
  ApiCall& k = b.call(ApiKind::KernelLaunch, 6 * kMs, 7 * kMs, s);  // held 1 ms (its module loaded, say)
  k.function = 0x42;
  capture_end(b, s, 8 * kMs);
  ApiCall& after = b.copy(true, rules::CopyDirection::HostToDevice, MemoryKind::Pageable, MemoryKind::Device, 32 << 20,
                          10 * kMs, 13 * kMs, s);
  b.op(GpuOpKind::Memcpy, after, 10 * kMs + 50 * kUs, 12 * kMs + 990 * kUs, 13, 1, 3);

  const Analysis a = analyze(b.log, AnalysisOptions{});
  for (size_t i : {2u, 3u, 4u}) EXPECT_TRUE(a.described[i].captured) << i;
  for (size_t i : {0u, 1u, 5u, 6u}) EXPECT_FALSE(a.described[i].captured) << i;
  EXPECT_EQ(a.captured_calls, 3u);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].call, 6u);
  EXPECT_EQ(a.findings[0].rule, RuleId::CopyAsyncPageableH2D);
  EXPECT_EQ(a.findings[0].evidence.by, ReleasedBy::OwnWork);
  EXPECT_TRUE(a.not_observed.empty());
}

// Fork and join: a second stream waits on an event recorded in the capturing stream and so joins the capture; its
// launch is recorded. It leaves when the capture ends on the origin stream. An event recorded outside any capture
// joins nothing.
TEST(AnalyzeCapture, AStreamJoinsThroughAnEventAndLeavesWhenTheOriginEnds) {
  Builder b;
  const uint64_t s = 0x5000, side = 0x6000, other = 0x7000, fork = 0xe1, unrelated = 0xe2;
  b.stream_create(s, 0, 0);
  b.stream_create(side, 0, 20);
  b.stream_create(other, 0, 40);
  event_call(b, ApiKind::EventRecord, other, unrelated, 100);                     // 3: outside any capture
  b.call(ApiKind::KernelLaunch, 1 * kMs, 2 * kMs, side);                          // 4: side, before the capture: judged
  capture_begin(b, s, 3 * kMs);                                                   // 5
  b.call(ApiKind::KernelLaunch, 3 * kMs + 5 * kUs, 4 * kMs + 5 * kUs, side);      // 6: side has not joined yet: judged
  event_call(b, ApiKind::EventRecord, s, fork, 4 * kMs + 10 * kUs);               // 7: the fork event, in the capture
  event_call(b, ApiKind::StreamWaitEvent, side, fork, 4 * kMs + 20 * kUs);        // 8: side joins
  b.call(ApiKind::KernelLaunch, 5 * kMs, 6 * kMs, side);                          // 9: recorded
  event_call(b, ApiKind::StreamWaitEvent, other, unrelated, 6 * kMs + 10 * kUs);  // 10: not a capture event
  b.call(ApiKind::KernelLaunch, 7 * kMs, 8 * kMs, other);                         // 11: other did not join
  capture_end(b, s, 9 * kMs);                                                     // 12
  b.call(ApiKind::KernelLaunch, 10 * kMs, 11 * kMs, side);                        // 13: side left: judged again

  const Analysis a = analyze(b.log, AnalysisOptions{});
  std::vector<size_t> captured;
  for (size_t i = 0; i < a.described.size(); ++i) {
    if (a.described[i].captured) captured.push_back(i);
  }
  EXPECT_EQ(captured, (std::vector<size_t>{7, 8, 9}));
  EXPECT_EQ(a.captured_calls, 3u);
  std::vector<size_t> judged_launches;
  for (const Finding& f : a.findings) judged_launches.push_back(f.call);
  EXPECT_EQ(judged_launches, (std::vector<size_t>{4, 6, 11, 13}));          // each held 1 ms (the cost threshold)
  for (const Finding& f : a.findings) EXPECT_EQ(f.rule, RuleId::CostCall);  // waiting for nothing: their own cost
}

// Re-recording a capture's event outside the capture makes waiting on it an ordinary wait again.
TEST(AnalyzeCapture, AnEventRecordedAgainOutsideTheCaptureNoLongerJoins) {
  Builder b;
  const uint64_t s = 0x5000, side = 0x6000, other = 0x7000, e = 0xe1;
  capture_begin(b, s, 0);
  event_call(b, ApiKind::EventRecord, s, e, 10 * kUs);         // 1: in the capture
  event_call(b, ApiKind::EventRecord, other, e, 20 * kUs);     // 2: again, outside
  event_call(b, ApiKind::StreamWaitEvent, side, e, 30 * kUs);  // 3: an ordinary wait
  b.call(ApiKind::KernelLaunch, 40 * kUs, 50 * kUs, side);     // 4
  const Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.described[1].captured);
  EXPECT_FALSE(a.described[2].captured);
  EXPECT_FALSE(a.described[3].captured);
  EXPECT_FALSE(a.described[4].captured);
}

// The capture ends only where it began, and not when the end was refused (another thread, non-relaxed mode).
TEST(AnalyzeCapture, OnlyASuccessfulEndOnTheOriginStreamEndsTheCapture) {
  Builder b;
  const uint64_t s = 0x5000, side = 0x6000, e = 0xe1;
  capture_begin(b, s, 0);
  event_call(b, ApiKind::EventRecord, s, e, 10 * kUs);
  event_call(b, ApiKind::StreamWaitEvent, side, e, 20 * kUs);
  capture_end(b, side, 30 * kUs).result = 903;                // 3: cudaErrorStreamCaptureUnmatched: not the origin
  capture_end(b, s, 60 * kUs).result = kCaptureWrongThread;   // 4: refused
  b.call(ApiKind::KernelLaunch, 100 * kUs, 110 * kUs, side);  // 5: still captured
  capture_end(b, s, 200 * kUs);                               // 6
  b.call(ApiKind::KernelLaunch, 300 * kUs, 310 * kUs, side);  // 7
  b.call(ApiKind::KernelLaunch, 320 * kUs, 330 * kUs, s);     // 8
  const Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.described[5].captured);
  EXPECT_FALSE(a.described[7].captured);
  EXPECT_FALSE(a.described[8].captured);
}

// A failed begin starts nothing; the legacy stream cannot capture.
TEST(AnalyzeCapture, AFailedBeginAndTheLegacyStreamCaptureNothing) {
  Builder b;
  capture_begin(b, 0x5000, 0).result = 1;  // cudaErrorInvalidValue
  capture_begin(b, 0x1, 10 * kUs);         // cudaStreamLegacy: the driver refuses it (a recording says success)
  b.call(ApiKind::KernelLaunch, 20 * kUs, 30 * kUs, 0x5000);
  b.call(ApiKind::KernelLaunch, 40 * kUs, 50 * kUs, 0x1);
  b.call(ApiKind::KernelLaunch, 60 * kUs, 70 * kUs, 0);
  const Analysis a = analyze(b.log, AnalysisOptions{});
  for (const rules::CallDescription& d : a.described) EXPECT_FALSE(d.captured);
}

// The per-thread default stream is one stream per thread: a capture on thread 0's does not capture thread 1's.
TEST(AnalyzeCapture, PerThreadDefaultStreamCapturesPerThread) {
  Builder b;
  ApiCall& begin = capture_begin(b, 0x2, 0);  // cudaStreamPerThread
  begin.thread = 0;
  ApiCall& mine = b.call(ApiKind::KernelLaunch, 10 * kUs, 20 * kUs, 0);
  mine.call.per_thread_variant = true;  // stream 0 in a _ptsz entry point: this thread's default stream
  b.call(ApiKind::KernelLaunch, 30 * kUs, 40 * kUs, 0x2).thread = 1;
  const Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.described[1].captured);
  EXPECT_FALSE(a.described[2].captured);
}

// Calls that the capture refused (a synchronization of the capturing stream, the legacy stream while a blocking
// stream captures, an unsafe call in global mode) returned an error and did nothing: not judged, not counted.
TEST(AnalyzeCapture, CallsTheCaptureRefusedAreNotJudged) {
  Builder b;
  const uint64_t s = 0x5000;
  capture_begin(b, s, 0);
  b.call(ApiKind::StreamSynchronize, 10 * kUs, 400 * kUs, s).result = kCaptureUnsupported;
  ApiCall& legacy = b.copy(false, rules::CopyDirection::DeviceToHost, MemoryKind::Device, MemoryKind::Pageable, 1 << 20,
                           500 * kUs, 900 * kUs);
  legacy.result = kCaptureImplicit;
  b.call(ApiKind::DeviceAlloc, 1 * kMs, 1 * kMs + 10 * kUs).result = kCaptureUnsupported;
  b.call(ApiKind::DeviceAlloc, 2 * kMs, 3 * kMs);  // an ordinary failure-free allocation: judged
  const Analysis a = analyze(b.log, AnalysisOptions{});
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].call, 4u);
  EXPECT_EQ(a.findings[0].rule, RuleId::CostAllocation);  // 1 ms of its own, no GPU work: a cost
  EXPECT_EQ(a.not_observed, (std::map<RuleId, uint64_t>{{RuleId::DeviceAlloc, 1}}));
  EXPECT_EQ(a.captured_calls, 0u);
}

// A graph launch is measured like a launch: documented asynchronous, and a fast one is neither reported nor counted.
// One whose graph holds a memcpy node into pageable memory (the activity record says so) returns only once that
// node has copied: graph-pageable-copy-node, its own copy as evidence. The stream synchronization after it is the
// real wait of the other.
TEST(AnalyzeCapture, GraphLaunchesAreMeasuredLikeLaunches) {
  Builder b;
  const uint64_t s = 0x5000;
  b.stream_create(s, 0, 0);
  ApiCall& fast = b.call(ApiKind::GraphLaunch, 1 * kMs, 1 * kMs + 8 * kUs, s);
  fast.handle = 0x6e0;
  b.op(GpuOpKind::Kernel, fast, 1 * kMs + 10 * kUs, 3 * kMs, 13);
  ApiCall& slow = b.call(ApiKind::GraphLaunch, 1 * kMs + 20 * kUs, 5 * kMs, s);  // held ~4 ms
  slow.handle = 0x6e0;
  b.op(GpuOpKind::Memcpy, slow, 3 * kMs, 4 * kMs + 995 * kUs, 13, 1, 3);  // its pageable copy node
  b.op(GpuOpKind::Kernel, slow, 5 * kMs + 10 * kUs, 8 * kMs, 13);
  b.call(ApiKind::StreamSynchronize, 5 * kMs + 20 * kUs, 8 * kMs + 4 * kUs, s);
  const Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_EQ(a.captured_calls, 0u);
  ASSERT_EQ(a.findings.size(), 2u);
  EXPECT_EQ(a.findings[0].call, 2u);
  EXPECT_EQ(a.findings[0].rule, RuleId::GraphPageableCopyNode);
  EXPECT_EQ(a.findings[0].predicted, RuleId::GraphPageableCopyNode);
  EXPECT_EQ(a.findings[0].level, rules::Level::Warning);
  EXPECT_EQ(a.findings[0].evidence.by, ReleasedBy::OwnWork);
  EXPECT_EQ(a.findings[0].waited_ns, 3 * kMs + 975 * kUs);  // until its copy node ended; then 5 us of its own
  EXPECT_TRUE(a.described[1].pageable_copy_node == false && a.described[2].pageable_copy_node);
  EXPECT_EQ(a.findings[1].call, 3u);
  EXPECT_EQ(a.findings[1].rule, RuleId::StreamSynchronize);
  EXPECT_EQ(a.findings[1].evidence.by, ReleasedBy::EarlierWorkSameStream);
  EXPECT_TRUE(a.not_observed.empty());
}

// A graph launched into a capturing stream becomes a child-graph node: recorded, not measured.
TEST(AnalyzeCapture, AGraphLaunchedIntoACaptureIsRecorded) {
  Builder b;
  capture_begin(b, 0x5000, 0);
  b.call(ApiKind::GraphLaunch, 10 * kUs, 2 * kMs, 0x5000);
  const Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_TRUE(a.described[1].captured);
  EXPECT_TRUE(a.findings.empty());
  EXPECT_EQ(a.captured_calls, 1u);
}

// Captured calls are ours to mark: a description that arrives marked (a hand-made log) is decided again.
TEST(AnalyzeCapture, TheAnalysisDecidesWhatWasCaptured) {
  Builder b;
  ApiCall& k = b.call(ApiKind::KernelLaunch, 0, 1 * kMs, 0x5000);
  k.call.captured = true;
  const Analysis a = analyze(b.log, AnalysisOptions{});
  EXPECT_FALSE(a.described[0].captured);
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.captured_calls, 0u);
}

}  // namespace
}  // namespace asynccheck

namespace asynccheck {
namespace {

// A unified-memory migration (CUPTI's counters; enqueued by no call) is device work: a device-wide synchronization
// that waited for it names it, rather than calling its time its own.
TEST(Analyze, ADeviceSyncNamesTheMigrationItWaitedFor) {
  EventLog log;
  log.api_names = {"cudaDeviceSynchronize"};
  ApiCall sync;
  sync.correlation_id = 7;
  sync.start_ns = 1'000'000;
  sync.end_ns = 23'000'000;
  sync.call.api = rules::ApiKind::DeviceSynchronize;
  log.calls.push_back(sync);
  GpuOp migration;
  migration.kind = GpuOpKind::Migration;
  migration.start_ns = 500'000;
  migration.end_ns = 22'990'000;
  migration.copy_kind = 1;
  migration.bytes = 256u << 20;
  log.ops.push_back(migration);
  const Analysis a = analyze(log, AnalysisOptions{});
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].rule, rules::RuleId::DeviceSynchronize);
  EXPECT_EQ(a.findings[0].evidence.op, 0);
  EXPECT_EQ(a.findings[0].waited_ns, 21'990'000u);
  EXPECT_EQ(a.findings[0].own_ns, 10'000u);
}

}  // namespace
}  // namespace asynccheck
