// The one analysis (analyze.h), as a step over a window of events: the core that analyze() runs once over a whole
// log and StreamingAnalysis (streaming.h) runs as the events come. Internal to analysis/: both callers own the
// window (an EventLog), the Analyzer owns what it knows about each of the window's calls and what later calls'
// descriptions read (streams, events, captures, launched functions), which it keeps across steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/graph_capture.h"

namespace asynccheck {

// The stream a call's scope is measured on: its own, or for an event synchronize the call that last recorded its
// event (copied, so that the record can leave the window before the synchronize is judged).
struct StreamAnchor {
  uint32_t stream_id = UINT32_MAX;  // CUPTI stream: of its own work, or of earlier work on its handle; or unknown
  rules::StreamKind kind = rules::StreamKind::Unknown;
  uint32_t thread = 0;
  uint64_t stream = 0;  // the handle as passed
  uint64_t end_ns = 0;  // when the call returned: work enqueued later is not in its scope
};

// What the analysis knows of one call of the window once it is described.
// One per call of the window and its chunk, held at the largest window's size: the small fields together after the
// large ones, and the rare note out of line, so that it stays small.
struct CallState {
  rules::CallDescription described;
  StreamAnchor self;
  StreamAnchor anchor;
  std::unique_ptr<std::string> note;  // the activity record's memory kinds disagreed with the registry (rare)
  rules::Prediction predicted;
  uint32_t own_stream = UINT32_MAX;  // the CUPTI stream of its first work op
  bool event_anchored = false;       // an event synchronize whose event was recorded: `anchor` is that record
  bool is_described = false, judged = false;
  bool outside_range = false;  // made outside the capture range: counted, not judged
};

class Analyzer {
 public:
  Analyzer(const AnalysisOptions& options, const rules::Environment& env);
  ~Analyzer();

  // One step over `log` (the window: the calls of the previous step, in the same order, then new ones in log
  // order; any GPU operations, sorted by before_in_log). Describes, in order, the calls that started before
  // `describe_before` (everything before then has come: calls and the records of their work), then judges the
  // described calls that returned before `judge_before` and were not judged yet. Findings are appended to
  // `findings` in call order, with indices into log.calls; counts go to counts().
  void step(const EventLog& log, uint64_t describe_before, uint64_t judge_before, std::vector<Finding>& findings);
  // The window dropped calls: `keep[i]` says whether its call i stayed.
  void retain(const std::vector<char>& keep);
  // Gives back the step's index (rebuilt by the next step).
  void release_index();

  const CallState& state(size_t call) const { return calls_[call]; }
  size_t described() const { return described_; }
  Analysis& counts() { return counts_; }  // every count of Analysis; never its per-call vectors or findings

  // Built over the window at each step (analyze.cpp), in the memory of the last unless release_index() gave it back.
  struct Index;

 private:
  bool awaits_record(size_t ci, uint64_t now_ns, const Index& idx) const;
  bool drained_after(size_t ci, uint64_t now_ns, const Index& idx) const;
  void describe(size_t ci, const Index& idx);
  void confirm_memory_kinds(size_t ci, rules::CallDescription& d, const Index& idx);
  void mark_pending_blocking_work(size_t from, size_t to, const Index& idx);

  struct Persistent {  // read by later calls' descriptions: bounded by the program's live streams, events, kernels
    std::unordered_map<uint64_t, rules::StreamKind> streams;
    std::unordered_map<uint64_t, rules::WaitMode> events;
    std::unordered_map<uint64_t, StreamAnchor> recorded;  // event -> its last cudaEventRecord
    std::unordered_set<uint64_t> stream_ordered, launched;
    std::map<std::tuple<rules::StreamKind, uint64_t, uint32_t>, uint32_t> seen;  // handle -> CUPTI stream
    CaptureTracker capture;
    bool profiler_on = false;  // between cudaProfilerStart and cudaProfilerStop (process-wide, like the profiler)
  };

  AnalysisOptions opt_;
  rules::Environment env_;
  const EventLog* log_of_step_ = nullptr;  // the window, during step()
  Persistent state_;
  std::unique_ptr<Index> idx_;
  std::vector<CallState, EventAllocator<CallState>> calls_;  // per window call (event memory: events.h)
  size_t described_ = 0;                                     // calls_[0, described_) are described
  Analysis counts_;
};

}  // namespace asynccheck
