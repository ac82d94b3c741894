// Joins what the host saw (API calls and how long each held the thread) with what the GPU did (activity records)
// and the rule engine's prediction, and decides what to report. Pure: runs on a live EventLog or a recording.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include "analysis/events.h"
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
};

// DocumentedObserved: the host waited for GPU work, as a rule says it may. ObservedUndocumented: it waited, and no
// rule says it should. OwnCost: the call spent host time of its own, waiting for nothing (cost-* rules).
enum class Verdict : uint8_t { DocumentedObserved, DocumentedNotObserved, ObservedUndocumented, OwnCost };

// What a call can wait for, from its documented behaviour (the GPU work a finding's "waited" time is measured
// against): nothing, the work of its own stream (a stream or event synchronize, a copy that waits for its stream;
// on the legacy default stream, every blocking stream), or the whole device (device synchronize, cudaFree, module
// loading, and any call no rule describes).
enum class WaitScope : uint8_t { None, Stream, Device };

// What the host waited for: the last GPU operation in the call's scope that ended while it held the host. Or, for
// a call that waited for nothing, what its own cost was.
enum class ReleasedBy : uint8_t {
  OwnWork,                // the call's own copy or memset (a synchronous transfer, a staged pageable copy)
  EarlierWorkSameStream,  // earlier work in the call's stream
  OtherStreamWork,        // work in another stream (device-wide wait, legacy stream)
  ModuleLoad,             // waited for nothing; a kernel module was loaded during the call (lazy loading)
  ContextCreation,        // the CUDA context was created during the call (first call of the process)
  // Waited for nothing that was timed: the call's own cost, or work that came without timestamps (CUPTI's device
  // buffers ran out: cupti/activity.cpp; the report counts such work), which proves nothing either way.
  NothingOnGpu,
};

struct Evidence {
  ReleasedBy by = ReleasedBy::NothingOnGpu;
  int64_t op = -1;          // index into EventLog::ops of the last awaited (or, GPU-side, delayed) work, -1 if none
  int64_t gap_ns = 0;       // how long after that op ended the call returned (negative: before)
  int64_t behind_op = -1;   // for own work: the op in the same stream it had to wait for, -1 if none
  // Work in the call's scope that was in flight when it began and still running when it returned: proof that it
  // did not wait for its scope (a rule said it may; it did not). -1 if none.
  int64_t running_op = -1;
  WaitScope scope = WaitScope::None;  // what the call could wait for
};

struct Finding {
  size_t call = 0;                                        // index into EventLog::calls
  rules::RuleId rule = rules::RuleId::UndocumentedBlock;  // the rule reported
  rules::RuleId predicted = rules::RuleId::UndocumentedBlock;  // the engine's host prediction for the call
  Verdict verdict = Verdict::DocumentedObserved;
  rules::Level level = rules::Level::Warning;
  uint64_t held_ns = 0;       // host time spent in the call: waited_ns + own_ns
  uint64_t waited_ns = 0;     // from its start until the last awaited GPU work ended (at most held_ns)
  uint64_t own_ns = 0;        // the rest: the call's own cost
  uint64_t gpu_delay_ns = 0;  // GPU-side findings: how long other work was held back
  // A documented wait shorter than the threshold: reported only where a site's waits add up (the report's
  // site_threshold), e.g. a synchronize every step of a loop.
  bool below_threshold = false;
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
  // Per call: the cudaEventRecord an event synchronize's scope is anchored at (its event's last record before it),
  // or -1. Compaction keeps the anchors of the calls it keeps judging.
  std::vector<int64_t> event_record;
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
