// What the analysis decides about one call (analyze.h): its verdict, the rule it is reported under, and the
// evidence, as measured. Apart from the analysis so that a log can carry the judgements of a run analyzed as it
// went (EventLog::findings: streaming.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "rules/catalog.h"
#include "rules/predict.h"

namespace asynccheck {

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
  int64_t op = -1;     // index into EventLog::ops of the last awaited (or, GPU-side, delayed) work, -1 if none
  int64_t gap_ns = 0;  // how long after that op ended the call returned (negative: before)
  // What held up the work it waited for (analyze.cpp: held_up). For its own work that started late: the earlier
  // work in its stream it first waited for, or, where the work of streams its stream waits for (the legacy default
  // stream and blocking streams wait for each other) held it up longer, the longest of that. For earlier work in its
  // stream (`op`): that other streams' work, only where it held that work up longer. -1 if none.
  int64_t behind_op = -1;
  // Work in the call's scope that was in flight when it began and still running when it returned: proof that it
  // did not wait for its scope (a rule said it may; it did not). -1 if none.
  int64_t running_op = -1;
  WaitScope scope = WaitScope::None;  // what the call could wait for
};

struct Finding {
  size_t call = 0;                                             // index into EventLog::calls
  rules::RuleId rule = rules::RuleId::UndocumentedBlock;       // the rule reported
  rules::RuleId predicted = rules::RuleId::UndocumentedBlock;  // the engine's host prediction for the call
  rules::HostBehavior predicted_behavior = rules::HostBehavior::NotDocumented;  // and what it said the host does
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
  std::string note;  // disagreements between our prediction and the activity records, etc.
};

}  // namespace asynccheck
