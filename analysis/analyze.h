// Joins what the host saw (API calls and how long each held the thread) with what the GPU did (activity records)
// and the rule engine's prediction, and decides what to report. Pure: runs on a live EventLog or a recording.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "analysis/events.h"
#include "analysis/finding.h"
#include "rules/predict.h"

namespace asynccheck {

struct AnalysisOptions {
  // A call that waited at least this long for GPU work is reported under its rule (a sync finding). 100 us is
  // ~20-50x the host cost of a launch or an async copy on current GPUs (2-5 us), so ordinary calls never reach it,
  // while any real wait for GPU work (a copy of a few hundred KB, a short kernel) does.
  uint64_t threshold_ns = 100'000;
  // Work in a call's scope that was still running this long after it returned proves the call did not wait for its
  // scope (Evidence::running_op): less could be the driver noticing the end late, or clock skew.
  uint64_t release_window_ns = 50'000;
  // Back-to-back GPU work in one stream starts within a few microseconds of its predecessor; a larger gap after
  // work in another stream ended means the stream was held back by it. Also the skew allowed between a GPU
  // operation's end and the return of a call that waited for it.
  uint64_t gpu_gap_ns = 20'000;
  // Host time a call spent on its own (waiting for no GPU work: allocation, pinning, module loading, driver locks)
  // is reported from this long, at level note (cost-* rules), never under a synchronization title. Measured on an
  // H100 and an H200: a 256 MiB cudaMalloc takes 100-350 us, the first launch of a kernel 120-500 us to load its
  // module, cudaStreamCreate or cudaFree of a cudaMallocAsync pointer 50-300 us: all of it set-up that a developer
  // cannot act on at 100 us, while a call that costs a millisecond a time in a loop is worth a look.
  uint64_t cost_threshold_ns = 1'000'000;
  // Judge only the calls made between cudaProfilerStart and cudaProfilerStop (capture_range=cudaProfilerApi, as
  // nsys's --capture-range): a steady-state check not cluttered by start-up. The others are counted.
  bool profiler_range = false;
  // Judge only the calls whose NVTX range (ApiCall::nvtx_range) it says are inside the capture range
  // (capture_range=nvtx:NAME: capture_range.h); empty: no such range.
  std::function<bool(uint32_t)> in_nvtx_range;
};

// The options a log's recorded settings (RunInfo) ask for; an NVTX capture range reads the log's ranges (a copy).
AnalysisOptions analysis_options(const EventLog& log);

struct Analysis {
  std::vector<rules::CallDescription> described;   // per call: the description completed with stream kinds etc.
  std::vector<rules::Prediction> predicted;        // per call
  std::vector<Finding> findings;                   // what is reported, in call order
  std::map<rules::RuleId, uint64_t> not_observed;  // documented-but-not-observed, per rule: predicted, did not happen
  uint64_t context_creation_ns = 0;                // host time spent creating contexts inside calls
  uint64_t calls_watched = 0;
  // Calls recorded into a graph by stream capture (CallDescription::captured): counted, never judged. Calls that a
  // capture refused (is_capture_error in graph_capture.h) did nothing and are neither judged nor counted here.
  uint64_t captured_calls = 0;
  uint64_t outside_range_calls = 0;  // made outside the capture range (AnalysisOptions::profiler_range): not judged
  uint64_t kind_disagreements = 0;   // activity records contradicted our memory-kind registry
};

// The analysis of a whole log in one step: the streaming analysis (streaming.h) given every event at once, each
// finding kept. Counts and findings include what an old recording's compaction carried (EventLog::carried);
// context_only calls are described but not judged. Captured calls are counted in captured_calls and not judged.
Analysis analyze(const EventLog& log, const AnalysisOptions& options);

// Whether `log` was compacted by an earlier version's capture (EventLog::carried, context_only calls): it then only
// analyzes at its run's thresholds, and lacks what a trace draws.
bool compacted(const EventLog& log);

// Streams that the legacy default stream waits for and that wait for it (judge_legacy_stream; compaction).
bool blocking_kind(rules::StreamKind k);

std::string_view released_by_text(ReleasedBy r);
std::string_view verdict_text(Verdict v);

// CUpti_ActivityMemoryKind as reported in MEMCPY records, mapped to ours (Unknown where it has no equivalent).
rules::MemoryKind memory_kind_from_activity(uint8_t cupti_kind);

}  // namespace asynccheck
