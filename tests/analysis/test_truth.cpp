// The analysis held to what the GPU runs showed: invariants over every committed recording (a finding under a
// synchronization title rests on GPU work that ended inside the call; own cost is only ever a note), the traps of
// issue 19 as recorded on an H100 (samples/traps), and fabricated logs of a call that waits and then works.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/recording.h"
#include "log_builder.h"
#include "report/report.h"
#include "rules/catalog.h"

namespace asynccheck {
namespace {

namespace fs = std::filesystem;
using rules::ApiKind;
using rules::Level;
using rules::RuleId;

using test_logs::kMs;
using test_logs::kUs;

const fs::path kSource = ASYNCCHECK_SOURCE_DIR;

EventLog load(const fs::path& path) {
  std::ifstream in(path);
  EventLog log;
  std::string error;
  EXPECT_TRUE(in.good()) << path;
  EXPECT_TRUE(read_recording(in, log, error)) << path << ": " << error;
  return log;
}

// Every committed recording: the recorded GPU runs, the runs kept whole, and the corpus of programs no one here
// wrote (tests/fixtures/corpus: docs/real-programs.md); with ASYNCCHECK_TRUTH_RECORDINGS=DIR (an absolute path: ctest
// runs in the build tree) the recordings in DIR too, a fresh GPU run's (scripts/gpu-corpus.sh's OUTDIR), held to the
// same invariants without committing them.
std::vector<fs::path> recordings_to_hold() {
  std::vector<fs::path> dirs;
  for (const char* dir : {"tests/fixtures/recordings", "tests/fixtures/runs", "tests/fixtures/corpus"}) {
    dirs.push_back(kSource / dir);
  }
  if (const char* extra = std::getenv("ASYNCCHECK_TRUTH_RECORDINGS"); extra != nullptr && *extra != '\0') {
    if (fs::is_directory(extra)) {
      dirs.emplace_back(extra);
    } else {
      ADD_FAILURE() << "ASYNCCHECK_TRUTH_RECORDINGS=" << extra << ": no such directory (a folder of .rec files)";
    }
  }
  std::vector<fs::path> out;
  for (const fs::path& dir : dirs) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".rec") out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The options the run was analyzed with: defaults, and the threshold it recorded.
AnalysisOptions options_of(const EventLog& log) {
  AnalysisOptions o;
  if (log.run.threshold_ns != 0) o.threshold_ns = log.run.threshold_ns;
  return o;
}

bool is_cost(RuleId r) { return r == RuleId::CostModuleLoad || r == RuleId::CostAllocation || r == RuleId::CostCall; }

bool is_own_op(const GpuOp& op, const ApiCall& c) {
  return op.correlation_id == c.correlation_id ||
         (c.driver_correlation_id != 0 && op.correlation_id == c.driver_correlation_id);
}

std::string api_name(const EventLog& log, const ApiCall& c) {
  return c.name < log.api_names.size() ? log.api_names[c.name] : "api#" + std::to_string(c.name);
}

// "file.rec: call 12 cudaFree (corr 34) rule free-waits-for-device held 5.2 ms waited ... by ... op ..."
std::string describe(const fs::path& path, const EventLog& log, const Finding& f) {
  const ApiCall& c = log.calls[f.call];
  std::ostringstream s;
  s << path.filename().string() << ": call " << f.call << " " << api_name(log, c) << " (corr " << c.correlation_id
    << ") rule " << rules::rule(f.rule).id << " level " << rules::level_name(f.level) << " held " << f.held_ns
    << " waited " << f.waited_ns << " own " << f.own_ns << " below " << f.below_threshold << " by "
    << released_by_text(f.evidence.by) << " op " << f.evidence.op;
  if (f.evidence.op >= 0) {
    const GpuOp& op = log.ops[static_cast<size_t>(f.evidence.op)];
    s << " (kind " << static_cast<int>(op.kind) << " corr " << op.correlation_id << " stream " << op.stream_id << " "
      << op.start_ns << ".." << op.end_ns << ")";
  }
  s << " running " << f.evidence.running_op;
  return s.str();
}

std::vector<const Finding*> findings_of(const Analysis& a, RuleId rule) {
  std::vector<const Finding*> out;
  for (const Finding& f : a.findings) {
    if (f.rule == rule) out.push_back(&f);
  }
  return out;
}

// ---- 1. What every finding of every committed recording must satisfy ----

TEST(Truth, EveryFindingOfEveryRecordingRestsOnWhatItClaims) {
  size_t recordings = 0, findings = 0, sync_findings = 0, cost_findings = 0;
  for (const fs::path& path : recordings_to_hold()) {
    const EventLog log = load(path);
    ++recordings;
    const AnalysisOptions o = options_of(log);
    const Analysis a = analyze(log, o);
    for (const Finding& f : a.findings) {
      ++findings;
      const std::string what = describe(path, log, f);
      const ApiCall& c = log.calls[f.call];
      const bool gpu_side = f.rule == RuleId::LegacyStreamSerialization;
      // (a) host time splits into waited and own.
      if (!gpu_side) {
        EXPECT_EQ(f.held_ns, c.end_ns - c.start_ns) << what;
        EXPECT_EQ(f.held_ns, f.waited_ns + f.own_ns) << what;
      }
      // (b) a synchronization title rests on GPU work that ended inside the call, waited for long enough.
      if (!is_cost(f.rule) && !gpu_side && !f.below_threshold) {
        ++sync_findings;
        EXPECT_GE(f.waited_ns, o.threshold_ns) << what;
        const ReleasedBy by = f.evidence.by;
        EXPECT_TRUE(by == ReleasedBy::OwnWork || by == ReleasedBy::EarlierWorkSameStream ||
                    by == ReleasedBy::OtherStreamWork)
            << what;
        {
          EXPECT_GE(f.evidence.op, 0) << what;
          if (f.evidence.op >= 0) {
            const GpuOp& op = log.ops[static_cast<size_t>(f.evidence.op)];
            EXPECT_NE(op.kind, GpuOpKind::Sync) << what;
            EXPECT_GT(op.end_ns, c.start_ns) << what;  // it ended inside the call, not before it
            EXPECT_EQ(is_own_op(op, c), by == ReleasedBy::OwnWork) << what;
          }
        }
      }
      // A wait kept for its site's total: documented, observed, under the threshold.
      if (f.below_threshold) {
        EXPECT_FALSE(is_cost(f.rule)) << what;
        EXPECT_GT(f.waited_ns, 0u) << what;
        EXPECT_LT(f.waited_ns, o.threshold_ns) << what;
      }
      // (c) own cost: a note, from the cost threshold, only for a call that did not wait past the threshold.
      if (is_cost(f.rule)) {
        ++cost_findings;
        EXPECT_EQ(f.level, Level::Note) << what;
        EXPECT_EQ(f.verdict, Verdict::OwnCost) << what;
        EXPECT_LT(f.waited_ns, o.threshold_ns) << what;
        EXPECT_GE(f.own_ns, o.cost_threshold_ns) << what;
      }
      // (d) a launch cannot wait for its own kernel: it is enqueued by the launch, which returns before it runs
      // (unless CUDA_LAUNCH_BLOCKING=1 makes every launch wait for it, rule launch-blocking-env).
      if (c.call.api == ApiKind::KernelLaunch && f.evidence.op >= 0 && f.predicted != RuleId::LaunchBlockingEnv) {
        const GpuOp& op = log.ops[static_cast<size_t>(f.evidence.op)];
        EXPECT_FALSE(f.evidence.by == ReleasedBy::OwnWork && op.kind == GpuOpKind::Kernel) << what;
        EXPECT_FALSE(is_own_op(op, c) && op.kind == GpuOpKind::Kernel) << what;
      }
      // (f) what the work it waited for first waited for (its own transfer: a graph's earlier node, earlier work in
      // its stream, work of a stream its stream waits for; earlier work in its stream: another stream's) ended inside
      // the call, no later than that work began (within the clock skew allowed).
      if (!gpu_side && f.evidence.behind_op >= 0) {
        EXPECT_TRUE(f.evidence.by == ReleasedBy::OwnWork || f.evidence.by == ReleasedBy::EarlierWorkSameStream) << what;
        const GpuOp& behind = log.ops[static_cast<size_t>(f.evidence.behind_op)];
        const GpuOp& waited_for = log.ops[static_cast<size_t>(f.evidence.op)];
        EXPECT_GT(behind.end_ns, c.start_ns) << what;
        EXPECT_LE(behind.end_ns, waited_for.start_ns + o.gpu_gap_ns) << what;
        if (f.evidence.by == ReleasedBy::EarlierWorkSameStream) {
          EXPECT_NE(behind.stream_id, waited_for.stream_id) << what;
        }
        // The legacy default stream's rule holds within a context.
        if (behind.stream_id != waited_for.stream_id) {
          EXPECT_EQ(behind.context, waited_for.context) << what;
          EXPECT_EQ(behind.device, waited_for.device) << what;
        }
      }
      // (e) what waited for nothing is never a warning or an error.
      if (f.level >= Level::Warning) {
        EXPECT_NE(f.evidence.by, ReleasedBy::NothingOnGpu) << what;
        EXPECT_NE(f.evidence.by, ReleasedBy::ModuleLoad) << what;
      }
    }
  }
  EXPECT_GE(recordings, 23u);  // the glob found the committed recordings
  EXPECT_GT(sync_findings, 20u);
  EXPECT_GT(cost_findings, 0u);
  std::cout << recordings << " recordings, " << findings << " findings (" << sync_findings << " sync, " << cost_findings
            << " cost)\n";
}

// ---- 2. The traps, recorded on an H100 ----

struct Trap {
  fs::path path;
  EventLog log;
  AnalysisOptions options;
  Analysis analysis;
  std::string dump() const {
    std::string s;
    for (const Finding& f : analysis.findings) s += describe(path, log, f) + "\n";
    return s;
  }
};

Trap trap(const std::string& run) {
  Trap t;
  t.path = kSource / "tests/fixtures/recordings" / ("traps." + run + ".rec");
  t.log = load(t.path);
  t.options = options_of(t.log);
  t.analysis = analyze(t.log, t.options);
  return t;
}

// cudaFree of a buffer the running 5 ms spin does not use: it waits for the spin (the program's clock: 5.22 ms),
// and its time is a wait for that kernel, not a cost of its own.
TEST(Truth, FreeDuringKernelWaitsForTheSpin) {
  const Trap t = trap("free_during_kernel");
  const auto frees = findings_of(t.analysis, RuleId::FreeWaitsForDevice);
  ASSERT_EQ(frees.size(), 1u) << t.dump();
  const Finding& f = *frees[0];
  const std::string what = describe(t.path, t.log, f);
  EXPECT_FALSE(f.below_threshold) << what;
  EXPECT_GE(f.waited_ns, 4'500 * kUs) << what;
  EXPECT_LT(f.own_ns, 1 * kMs) << what;
  EXPECT_TRUE(f.evidence.by == ReleasedBy::OtherStreamWork || f.evidence.by == ReleasedBy::EarlierWorkSameStream)
      << what;
  ASSERT_GE(f.evidence.op, 0) << what;
  const GpuOp& spin = t.log.ops[static_cast<size_t>(f.evidence.op)];
  EXPECT_EQ(spin.kind, GpuOpKind::Kernel) << what;
  EXPECT_GE(spin.end_ns - spin.start_ns, 4'500 * kUs) << what;  // the spin itself, not some short kernel
}

// The first launch of a kernel in a module of its own, while a 20 ms spin runs on another stream (clock: 20.11
// ms): loading the module waits for the spin. The wait is for the spin, never for the launch's own kernel.
TEST(Truth, FirstLaunchBusyWaitsForTheSpinOnTheOtherStream) {
  const Trap t = trap("first_launch_busy");
  const auto loads = findings_of(t.analysis, RuleId::FirstLaunchLazyLoading);
  ASSERT_EQ(loads.size(), 1u) << t.dump();
  const Finding& f = *loads[0];
  const std::string what = describe(t.path, t.log, f);
  const ApiCall& launch = t.log.calls[f.call];
  EXPECT_EQ(launch.call.api, ApiKind::KernelLaunch) << what;
  EXPECT_GE(f.waited_ns, 15 * kMs) << what;
  EXPECT_NE(f.evidence.by, ReleasedBy::OwnWork) << what;
  ASSERT_GE(f.evidence.op, 0) << what;
  const GpuOp& awaited = t.log.ops[static_cast<size_t>(f.evidence.op)];
  EXPECT_NE(awaited.correlation_id, launch.correlation_id) << what;
  EXPECT_FALSE(is_own_op(awaited, launch)) << what;
  EXPECT_EQ(awaited.kind, GpuOpKind::Kernel) << what;
  const GpuOp* own = nullptr;
  for (const GpuOp& op : t.log.ops) {
    if (op.kind == GpuOpKind::Kernel && is_own_op(op, launch)) own = &op;
  }
  ASSERT_NE(own, nullptr) << "the launch's own kernel is in the recording";
  EXPECT_NE(awaited.stream_id, own->stream_id) << what;
}

// 200 x (70 us spin, cudaDeviceSynchronize): each wait is under the threshold, together ~14 ms: one site, reported
// because its waits add up to the site threshold, and not at all when below-threshold sites are never reported.
TEST(Truth, ManySmallSyncsAddUpToOneSite) {
  const Trap t = trap("many_small_syncs");
  const report::ReportData data = report::make_report(t.log, t.analysis);
  std::vector<const report::SiteRow*> syncs;
  for (const report::SiteRow& row : data.rows) {
    if (row.api == "cudaDeviceSynchronize") syncs.push_back(&row);
  }
  ASSERT_EQ(syncs.size(), 1u) << t.dump();
  const report::SiteRow& row = *syncs[0];
  EXPECT_EQ(row.rule, RuleId::DeviceSynchronize);
  EXPECT_EQ(row.count, 200u);
  EXPECT_EQ(row.below, 200u);
  EXPECT_GE(row.waited_ns, 10 * kMs);
  EXPECT_EQ(row.total_ns, row.waited_ns + row.own_ns);

  report::SiteOptions never;
  never.site_threshold_ns = 0;
  const report::ReportData none = report::make_report(t.log, t.analysis, never);
  for (const report::SiteRow& r : none.rows) {
    EXPECT_NE(r.api, "cudaDeviceSynchronize") << rules::rule(r.rule).id << " x" << r.count;
  }
}

// With nothing in flight a call's time is its own: never a warning (at most a cost note).
TEST(Truth, IdleMallocAndIdleFirstLaunchAreNoWarnings) {
  for (const char* run : {"malloc_idle", "first_launch_idle"}) {
    const Trap t = trap(run);
    for (const Finding& f : t.analysis.findings) {
      EXPECT_LT(f.level, Level::Warning) << describe(t.path, t.log, f);
    }
  }
}

// A graph launch holding a device-to-host memcpy node into pageable memory: what held it is its own copy (the
// node), whatever the rule it is reported under; never a cost.
TEST(Truth, GraphPageableNodeLaunchesNameTheirOwnCopy) {
  const Trap t = trap("graph_pageable_node");
  size_t launches = 0;
  for (const Finding& f : t.analysis.findings) {
    const ApiCall& c = t.log.calls[f.call];
    if (c.call.api != ApiKind::GraphLaunch) continue;
    ++launches;
    const std::string what = describe(t.path, t.log, f);
    EXPECT_FALSE(is_cost(f.rule)) << what;
    EXPECT_EQ(f.evidence.by, ReleasedBy::OwnWork) << what;
    ASSERT_GE(f.evidence.op, 0) << what;
    const GpuOp& op = t.log.ops[static_cast<size_t>(f.evidence.op)];
    EXPECT_EQ(op.kind, GpuOpKind::Memcpy) << what;
    EXPECT_TRUE(is_own_op(op, c)) << what;
  }
  EXPECT_GT(launches, 0u) << t.dump();
}

// ---- 3. Fabricated: a call that waits and then works ----

using test_logs::Builder;

std::string dump(const Builder& b, const Analysis& a) {
  std::string s;
  for (const Finding& f : a.findings) s += describe("fabricated", b.log, f) + "\n";
  return s;
}

// cudaFree begins while a 5 ms kernel runs on stream 13 and returns 400 us after it ended: it waited for the
// kernel, then unmapped on its own.
TEST(Truth, FreeThatWaitsThenWorksSplitsIntoWaitedAndOwn) {
  Builder b;
  b.stream_create(0x5000, 0, 0);
  const uint64_t kernel_start = 100 * kUs, kernel_end = kernel_start + 5 * kMs;
  const size_t spin = b.kernel(0x5000, 13, 50 * kUs, kernel_start, kernel_end, 0x1234);
  const uint64_t free_start = 1 * kMs, free_end = kernel_end + 400 * kUs;
  b.call(ApiKind::Free, free_start, free_end).handle = 0xd000;

  const Analysis a = analyze(b.log, AnalysisOptions{});
  ASSERT_EQ(a.findings.size(), 1u) << dump(b, a);
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.rule, RuleId::FreeWaitsForDevice) << dump(b, a);
  EXPECT_EQ(f.verdict, Verdict::DocumentedObserved);
  EXPECT_FALSE(f.below_threshold);
  EXPECT_EQ(f.held_ns, free_end - free_start);
  EXPECT_EQ(f.waited_ns, kernel_end - free_start);
  EXPECT_EQ(f.own_ns, 400 * kUs);
  EXPECT_EQ(f.evidence.op, static_cast<int64_t>(spin));
  EXPECT_TRUE(f.evidence.by == ReleasedBy::OtherStreamWork || f.evidence.by == ReleasedBy::EarlierWorkSameStream)
      << dump(b, a);
  EXPECT_EQ(f.evidence.running_op, -1);
}

// The refutation: the kernel ends 2 ms after cudaFree returned (held 1.5 ms), so the free did not wait for the
// device as the rule says it may. Its 1.5 ms are its own: a cost note naming the kernel still running.
TEST(Truth, FreeThatReturnsWhileTheKernelRunsIsOwnCostNotAWait) {
  Builder b;
  b.stream_create(0x5000, 0, 0);
  const uint64_t free_start = 1 * kMs, free_end = free_start + 1'500 * kUs;
  const size_t spin = b.kernel(0x5000, 13, 50 * kUs, 100 * kUs, free_end + 2 * kMs, 0x1234);
  b.call(ApiKind::Free, free_start, free_end).handle = 0xd000;

  const Analysis a = analyze(b.log, AnalysisOptions{});
  for (const Finding& f : a.findings) {
    EXPECT_TRUE(is_cost(f.rule)) << dump(b, a);
  }
  ASSERT_EQ(a.findings.size(), 1u) << dump(b, a);
  const Finding& f = a.findings[0];
  EXPECT_EQ(f.rule, RuleId::CostAllocation) << dump(b, a);
  EXPECT_EQ(f.level, Level::Note);
  EXPECT_EQ(f.waited_ns, 0u);
  EXPECT_EQ(f.own_ns, 1'500 * kUs);
  EXPECT_EQ(f.evidence.running_op, static_cast<int64_t>(spin));
  EXPECT_EQ(a.not_observed.at(RuleId::FreeWaitsForDevice), 1u);
}

// cudaStreamSynchronize of stream A, whose work ended before it began, while work on stream B ends inside it: the
// sync waited for nothing of its stream. B's kernel is no evidence of a wait.
TEST(Truth, StreamSyncOfAnIdleStreamWaitsForNoOtherStream) {
  Builder b;
  const uint64_t a_handle = 0x5000, b_handle = 0x6000;
  b.stream_create(a_handle, kStreamNonBlockingFlag, 0);
  b.stream_create(b_handle, kStreamNonBlockingFlag, 10);
  b.kernel(a_handle, 13, 20 * kUs, 30 * kUs, 500 * kUs, 0x1111);       // A: done at 0.5 ms
  b.kernel(b_handle, 14, 40 * kUs, 50 * kUs, 4 * kMs, 0x2222);         // B: ends at 4 ms
  const uint64_t sync_start = 2 * kMs, sync_end = 4 * kMs + 30 * kUs;  // B ends 30 us before it returns
  b.call(ApiKind::StreamSynchronize, sync_start, sync_end, a_handle);

  const Analysis a = analyze(b.log, AnalysisOptions{});
  for (const Finding& f : a.findings) {
    const std::string what = describe("fabricated", b.log, f);
    EXPECT_EQ(f.waited_ns, 0u) << what;
    EXPECT_LT(f.evidence.op, 0) << what;
    EXPECT_NE(f.rule, RuleId::StreamSynchronize) << what;
  }
  // Its 2 ms are its own (a cost note), not a synchronization.
  ASSERT_EQ(a.findings.size(), 1u) << dump(b, a);
  EXPECT_EQ(a.findings[0].rule, RuleId::CostCall);
  EXPECT_EQ(a.findings[0].own_ns, sync_end - sync_start);
  EXPECT_EQ(a.not_observed.at(RuleId::StreamSynchronize), 1u);
}

// The corpus of programs no one here wrote (tests/fixtures/corpus, docs/real-programs.md): each report is pinned as
// JSON, reviewed against the program's own clock when it was recorded; any change to rules, attribution or format
// shows here. ASYNCCHECK_UPDATE_GOLDEN=1 rewrites the files (review the diff).
TEST(Truth, CorpusReportsAreThoseReviewed) {
  size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(kSource / "tests/fixtures/corpus")) {
    if (entry.path().extension() != ".rec") continue;
    const EventLog log = load(entry.path());
    const Analysis a = analyze(log, options_of(log));
    report::ReportData data = report::make_report(log, a);
    data.source_root = "/work/main";  // where the programs were built on the GPU machine
    std::ostringstream out;
    report::write_json(out, data);
    fs::path golden = entry.path();
    golden.replace_extension(".json");
    if (std::getenv("ASYNCCHECK_UPDATE_GOLDEN")) std::ofstream(golden) << out.str();
    std::ifstream in(golden);
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(out.str(), want.str()) << golden << " differs; if intended, rerun with ASYNCCHECK_UPDATE_GOLDEN=1";
    ++checked;
  }
  EXPECT_GE(checked, 10u);
}

}  // namespace
}  // namespace asynccheck

namespace asynccheck {
namespace {

// A call no rule says waits for its transfer (a pinned cudaMemcpyAsync) whose own copy began only after it returned:
// it did not wait for it (review of issue 19: waited underflowed to 2^64 - 5 us).
TEST(Truth, AnAsyncCallsCopyThatBeganAfterItReturnedWasNotWaitedFor) {
  test_logs::Builder b;
  ApiCall& copy = b.copy(true, rules::CopyDirection::HostToDevice, rules::MemoryKind::Pinned, rules::MemoryKind::Device,
                         1 << 20, 0, 150 * test_logs::kUs, 0x10);
  b.op(GpuOpKind::Memcpy, copy, 155 * test_logs::kUs, 180 * test_logs::kUs, 13, 2, 3);
  ApiCall& late = b.copy(true, rules::CopyDirection::HostToDevice, rules::MemoryKind::Pinned, rules::MemoryKind::Device,
                         1 << 20, 1 * test_logs::kMs, 1 * test_logs::kMs + 150 * test_logs::kUs, 0x10);
  // Began inside it, ended 30 us after it returned: it did not wait for that either.
  b.op(GpuOpKind::Memcpy, late, 1 * test_logs::kMs + 30 * test_logs::kUs, 1 * test_logs::kMs + 180 * test_logs::kUs, 13,
       2, 3);
  const Analysis a = analyze(b.log, AnalysisOptions{});
  for (const Finding& f : a.findings) {
    EXPECT_LE(f.waited_ns, f.held_ns);
    EXPECT_EQ(f.waited_ns + f.own_ns, f.held_ns);
  }
  EXPECT_TRUE(a.findings.empty()) << a.findings.size();
}

}  // namespace
}  // namespace asynccheck
