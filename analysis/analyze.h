// Joins what the host saw (API calls and how long each held the thread) with what the GPU did (activity records)
// and the rule engine's prediction, and decides what to report. Pure: runs on a live EventLog or a recording.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/events.h"
#include "rules/predict.h"

namespace asynccheck {

struct AnalysisOptions {
  // A call that held the host at least this long is "observed blocking". 100 us is ~20-50x the host cost of a
  // launch or an async copy on current GPUs (2-5 us), so ordinary calls never reach it, while any real wait for
  // GPU work (a copy of a few hundred KB, a short kernel) does.
  uint64_t threshold_ns = 100'000;
  // A GPU operation that ended at most this long before (or after: clocks are read at different points) the call
  // returned is what released it. The driver notices completion within a few microseconds.
  uint64_t release_window_ns = 50'000;
  // Back-to-back GPU work in one stream starts within a few microseconds of its predecessor; a larger gap after
  // work in another stream ended means the stream was held back by it.
  uint64_t gpu_gap_ns = 20'000;
  // A call no rule predicts to hold the host, which held it without any GPU work ending near its return (its own
  // cost: allocator bookkeeping, unmapping, driver locks), is reported from this long, not from threshold_ns: it
  // waited for nothing, and calls like cudaFree of a cudaMallocAsync pointer or cudaStreamCreate cost 50-300 us of
  // their own (measured on an H200: 60-88 us over 12 runs, once above 100 us in 20). Holds that GPU work explains
  // are reported from threshold_ns as always, and so are rules' documented holds.
  uint64_t own_cost_threshold_ns = 1'000'000;
};

enum class Verdict : uint8_t { DocumentedObserved, DocumentedNotObserved, ObservedUndocumented };

enum class ReleasedBy : uint8_t {
  OwnWork,                // the call's own copy/memset/kernel finished
  EarlierWorkSameStream,  // earlier work in the call's stream
  OtherStreamWork,        // work in another stream (device-wide wait, legacy stream)
  ModuleLoad,             // a kernel module was loaded during the call (lazy loading)
  ContextCreation,        // the CUDA context was created during the call (first call of the process)
  NothingOnGpu,           // no GPU work ended near the call's return: the call's own cost
};

struct Evidence {
  ReleasedBy by = ReleasedBy::NothingOnGpu;
  int64_t op = -1;          // index into EventLog::ops of the releasing (or delaying) GPU work, -1 if none
  int64_t gap_ns = 0;       // how long after that op ended the call returned (negative: before)
  int64_t behind_op = -1;   // for own work: the op in the same stream it had to wait for, -1 if none
};

struct Finding {
  size_t call = 0;                                        // index into EventLog::calls
  rules::RuleId rule = rules::RuleId::UndocumentedBlock;  // the rule reported
  rules::RuleId predicted = rules::RuleId::UndocumentedBlock;  // the engine's host prediction for the call
  Verdict verdict = Verdict::DocumentedObserved;
  rules::Level level = rules::Level::Warning;
  uint64_t held_ns = 0;       // host time spent in the call
  uint64_t gpu_delay_ns = 0;  // GPU-side findings: how long other work was held back
  Evidence evidence;
  std::string note;           // disagreements between our prediction and the activity records, etc.
};

struct Analysis {
  std::vector<rules::CallDescription> described;  // per call: the description completed with stream kinds etc.
  std::vector<rules::Prediction> predicted;       // per call
  std::vector<Finding> findings;                  // what is reported, in call order
  std::map<rules::RuleId, uint64_t> not_observed; // documented-but-not-observed, per rule: predicted, did not happen
  uint64_t context_creation_ns = 0;               // host time spent creating contexts inside calls
  uint64_t calls_watched = 0;
  // Calls recorded into a graph by stream capture (CallDescription::captured): counted, never judged. Calls that a
  // capture refused (is_capture_error in graph_capture.h) did nothing and are neither judged nor counted here.
  uint64_t captured_calls = 0;
  std::vector<size_t> capture_state_calls;        // calls that changed the capture state (compaction keeps them)
  uint64_t kind_disagreements = 0;                // activity records contradicted our memory-kind registry
  std::vector<size_t> disagreeing_calls;          // the judged calls those disagreements came from (compaction)
};

// Counts and findings include what compaction carried (EventLog::carried); context_only calls are described but
// not judged (no findings, no counts of their own). Captured calls are counted in captured_calls and not judged.
Analysis analyze(const EventLog& log, const AnalysisOptions& options);

// Streams that the legacy default stream waits for and that wait for it (judge_legacy_stream; compaction).
bool blocking_kind(rules::StreamKind k);

std::string_view released_by_text(ReleasedBy r);
std::string_view verdict_text(Verdict v);

// CUpti_ActivityMemoryKind as reported in MEMCPY records, mapped to ours (Unknown where it has no equivalent).
rules::MemoryKind memory_kind_from_activity(uint8_t cupti_kind);

}  // namespace asynccheck
