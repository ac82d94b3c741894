// The analysis as the events come (live, on the capture's analysis thread; offline, analyze() gives it a whole log
// at once): each call is judged once, when it is settled, by the one analysis (analyzer.h); its finding goes into its
// site's counts and the call leaves, so that memory is bounded by design. Pure, no CUDA: tested on recordings.
//
// Settled: the horizon H says everything that ended before it has come (calls, and the activity records of work
// their calls enqueued: the capture's records horizon, awaited_records.h). A call is described once every call that
// started before it and its own work's records are in (it started before H - margin), and judged once everything
// its judgement reads is in (it returned before H - margin: what ended while it held the host, what was still
// running just after). The margin covers records of finished work a flush has not handed over yet, and the skew
// between GPU and CPU timestamps.
//
// What is kept, and why it is bounded:
//  - the window: calls not judged yet; GPU work that a call not judged yet may read (what ended after the earliest
//    such call began, less the analysis' windows), per stream the work before that (what held later work back in
//    its stream), and the calls that enqueued work still kept (when it was enqueued, on which stream). The program's
//    calls within the margin, and its GPU work in flight.
//  - what later descriptions read (analyzer.h, Analyzer::Persistent): the program's live streams, events,
//    stream-ordered allocations, captures, and the kernels it launched.
//  - per (stack, API, rule, NVTX range, below the threshold) the first samples_per_site findings, with their calls and
//    the GPU work their evidence names: a site's example is its first finding, and a site of at most that many calls
//    reports its exact median. The others are counted per key in EventLog::carried (count, times, waited and own,
//    bytes, a median sketch). So: the program's call sites, never its calls.
//  - per kernel name, its earliest operation (call sites skip kernel frames by name: names.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/events.h"
#include "analysis/flat_map.h"

namespace asynccheck {

class Analyzer;

struct StreamingOptions {
  AnalysisOptions analysis;
  // See above. At a launch-bound loop's ~0.4M calls a second, the margin keeps ~0.4M calls per second of it.
  uint64_t margin_ns = 50'000'000;
  size_t samples_per_site = 64;  // findings kept whole per key (above); the report's exact medians need 64
};

// What the analysis lets go, as it lets it go: a trace written as the run goes (report/trace_stream.h) draws every
// event without the analysis keeping them. Called on the analysis' thread, with the window as it is then.
class ReleaseSink {
 public:
  virtual ~ReleaseSink() = default;
  // A step's findings (on window.calls, their evidence on window.ops), before they are folded into their sites.
  virtual void judged(const EventLog& window, const std::vector<Finding>& findings) = 0;
  // The ops whose `keep` is 0 are let go; the calls that enqueued them are still in the window (a call is kept while
  // its work is), and every finding that names them was made (they are kept while a call not judged may read them).
  virtual void ops_released(const EventLog& window, const std::vector<char>& keep) = 0;
  // The calls whose `keep` is 0 are let go (judged, and none of their work kept).
  virtual void calls_released(const EventLog& window, const std::vector<char>& keep) = 0;
};

class StreamingAnalysis {
 public:
  StreamingAnalysis(const StreamingOptions& options, const rules::Environment& env);
  ~StreamingAnalysis();
  StreamingAnalysis(StreamingAnalysis&&) noexcept;
  StreamingAnalysis& operator=(StreamingAnalysis&&) noexcept;

  // Calls in log order (before_in_log), none before a call described already (everything that started before the
  // horizon has come); GPU operations in any order.
  void add(CallVector calls, OpVector ops);
  // As add(), the calls copied from a range in log order: the feed's backlog hands its front over without a vector of
  // the chunk in between.
  void add_copy(std::span<const ApiCall> calls, OpVector ops);
  void set_marks(std::vector<Mark> marks);  // every mark so far (they replace the previous ones)
  // Calls and GPU operations counted but never given to us (the capture shed them: feed.h).
  void count_unanalyzed(uint64_t calls, uint64_t ops);
  // Describes and judges what `horizon_ns` settles, then lets go of what no later call can read.
  void advance(uint64_t horizon_ns);

  // Gives back what the steps rebuild each time (the index, the prune's tables), keeping the window. The feed calls
  // it once a round's backlog is drained: held until the next round, that memory sat beside the round's own copies
  // of its calls (taken, sorted, merged), and the heap grew into holes of sizes no later round fitted. A flood that
  // keeps the backlog full keeps them from chunk to chunk.
  void release_scratch();

  const EventLog& window() const { return window_; }
  // Everything let go from now on is handed to `sink` too (null: none); finish() lets go of everything left.
  void set_release_sink(ReleaseSink* sink) { release_ = sink; }
  uint64_t judged_calls() const { return judged_calls_; }

  // Judges everything left. `log`: the examples' calls and the GPU work they name, EventLog::carried the rest, run
  // and tables left to the caller (every event is analyze()'s case: a trace). `analysis`: its findings index `log`.
  struct Result {
    EventLog log;
    Analysis analysis;
  };
  Result finish();

 private:
  void count_added(size_t calls, const OpVector& ops);
  void fold(std::vector<Finding>& findings);
  uint32_t keep_op(size_t window_op);
  uint32_t keep(const GpuOp& op);  // into the result's ops once: its index there
  void prune(uint64_t cutoff_ns);

  StreamingOptions opt_;
  ReleaseSink* release_ = nullptr;
  std::unique_ptr<Analyzer> analyzer_;
  EventLog window_;
  uint64_t described_until_ = 0;  // describe_before of the last step
  uint64_t judged_calls_ = 0, ops_seen_ = 0, unanalyzed_ops_ = 0;

  // The examples (above) and what was folded.
  struct Example {
    ApiCall call;
    rules::CallDescription described;
    rules::Prediction predicted;
    Finding finding;  // evidence ops index out_ops_
  };
  std::vector<Example> examples_;
  OpVector out_ops_;
  std::map<std::tuple<uint64_t, uint64_t, uint32_t, uint64_t, uint8_t>, uint32_t> out_op_index_;
  std::map<std::tuple<uint32_t, uint16_t, rules::RuleId, uint32_t, bool>, size_t> kept_per_key_;
  std::map<std::tuple<uint32_t, uint16_t, rules::RuleId, uint32_t>, size_t> carried_index_;
  Carried carried_;
  std::unordered_map<KernelName, GpuOp> first_kernels_;  // per kernel name, its earliest operation
  // prune()'s tables, kept so that a step does not allocate (and fault in) them afresh.
  FlatMap<char> scratch_ids_, scratch_live_;
  FlatMap<size_t> scratch_streams_;
  std::vector<char> scratch_keep_op_, scratch_keep_call_;
};

}  // namespace asynccheck
