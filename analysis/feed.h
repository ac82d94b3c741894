// The live feed of the streaming analysis (streaming.h), without the capture: events arrive in batches (what the
// threads appended since the last round, the activity records decoded since), wait in a backlog sorted by start,
// and move into the analysis a chunk at a time, as far as the records horizon settles them. Past its limits the
// backlog sheds ordinary calls (counted, not analyzed). Pure, no CUDA: the capture runs it on its two analysis threads
// (AnalysisFeed below says how they share it), tests and bench/compactor_replay on fabricated streams.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <span>
#include <unordered_set>
#include <vector>

#include "analysis/awaited_records.h"
#include "analysis/streaming.h"
#include "analysis/events.h"

namespace asynccheck {

// How the streaming analysis kept up, for the `stats` option (docs/performance.md): rounds and chunks run, how long they took,
// how far the threads got ahead of them, and what was kept at the end. The chunks, their times and the window's peaks
// count those of the end too (finish() takes the backlog left in chunks).
struct FeedStats {
  uint64_t rounds = 0, chunks = 0;
  uint64_t largest_chunk = 0;  // calls
  uint64_t peak_backlog = 0;   // calls taken from the threads and waiting for a chunk, at most
  uint64_t compact_ns = 0, longest_chunk_ns = 0;
  // Where a round's time goes besides the chunks: flushing CUPTI and taking its records (flush_ns), taking the
  // threads' buffers (take_ns), and adding them to the backlog: sorting, merging, shedding (add_ns).
  uint64_t flush_ns = 0, take_ns = 0, add_ns = 0;
  // Between two rounds' batches, at most (a flood's: pace.h's kPoll when it keeps up).
  uint64_t longest_round_gap_ns = 0;
  // The analysis' window after the last chunk (at the end: the calls and GPU work the report keeps), and the calls
  // judged so far.
  uint64_t kept_calls = 0, kept_ops = 0, compacted_calls = 0;
  uint64_t peak_window_calls = 0;  // the analysis' window after a chunk, at most
  uint64_t peak_window_ops = 0;    // likewise, its GPU work
  uint64_t dropped_ops = 0;        // GPU work of calls shed, dropped with them (drop_orphan_work)
  // Activity records that came a round late: the operation ended before the previous batch's delivery time, yet
  // came in this batch. The margin (CompactOptions::margin_ns) must cover how much earlier they ended.
  uint64_t late_ops = 0, latest_late_ns = 0;
  uint64_t shed_calls = 0;  // counted without being analyzed (RunInfo::unanalyzed_calls)
  // Of those, calls that were not ordinary (they had a stack, changed state, or were on the legacy stream): dropped
  // only because they came faster than the analysis for so long that memory would have grown without bound. The
  // report is then incomplete (AnalysisFeed::lose, AtThread::Lose).
  uint64_t lost_calls = 0;
  // records_before(): calls whose work's record had not come at the last round (what held the records horizon
  // back), and calls given up on because their record was kRecordOverdueNs late (a launch into a capture, a lost
  // record, an empty graph): from then on the horizon no longer waits for them (awaited_records.h).
  uint64_t awaited_records = 0, overdue_records = 0;
};

// Whether `c` is an ordinary call that may be counted without being analyzed when the analysis falls behind
// (AnalysisFeed::shed, and the capture's per-thread limit): no stack was captured for it (the capture saw it return
// fast and no rule predicts it blocks, so it cannot be a finding), it is not on the legacy default stream
// (on_legacy_stream), it held the host less than `threshold_ns` (an unwind that failed leaves no stack either), it
// succeeded, and it only enqueued work or queried a stream: a copy, a memset, a stream query, or a launch of a kernel launched before (a first
// launch is a finding's subject). Calls that create or change state later calls read (streams, events,
// allocations, captures) never are.
bool sheddable(const ApiCall& c, bool function_launched_before, uint64_t threshold_ns);

// The second level (AnalysisFeed::shed_hard, and the capture's per-thread limit at twice its share): any fast call
// without a stack that neither changes state (rules::changes_state) nor enqueues on the legacy default stream: event
// records, stream queries (also when they returned cudaErrorNotReady), first launches that returned fast.
bool sheddable_hard(const ApiCall& c, uint64_t threshold_ns);

// What the capture does with a call its thread just made, when the thread's buffer already holds `buffered` calls
// and `share` is the thread's share of compact_backlog (0: no limit). Below the share: Keep. From the share on:
// Shed an ordinary call (sheddable), from twice the share any sheddable_hard one; Shed = counted, not analyzed.
// From kLoseAtShares times the share the collecting thread has not taken the buffer for so long (stuck, or many
// threads flooding it with calls no level may shed) that only dropping every call keeps memory bounded: Lose =
// counted, not analyzed, and the report says it is incomplete.
enum class AtThread { Keep, Shed, Lose };
constexpr size_t kLoseAtShares = 8;
AtThread at_thread(const ApiCall& c, size_t buffered, size_t share, bool function_launched_before,
                   uint64_t threshold_ns);

// Enqueues on the legacy default stream: the rules may predict it serializes with other blocking streams
// (legacy-stream-serialization). The capture walks such a call's stack only once another blocking stream had work
// (interpose/blocking_streams.h), so a call without a stack may still be a finding: never shed (above).
bool on_legacy_stream(const ApiCall& c);

// Where the events given to the analysis go as well, a chunk at a time in start order (a recording written as the
// run goes: report/recording_stream.h). Called under the analysis' lock (feed.h: AnalysisFeed), one call at a time.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void write(const CallVector& calls, const OpVector& ops) = 0;
  // The same, the events the sink's to keep (a copy made for it): a sink that hands them to another thread moves them.
  virtual void take(CallVector&& calls, OpVector&& ops) { write(calls, ops); }
  // The run is ending: the analysis' threads stopped, what is left comes now (AnalysisFeed::finish).
  virtual void finishing() {}
  // The analysis advanced to `horizon_ns` (with `margin_ns`: streaming.h) after the events given so far, with these
  // marks (every one so far): a recording says so, and an offline analysis takes the same step (analysis/replay.h).
  virtual void advanced(uint64_t horizon_ns, uint64_t margin_ns, const std::vector<Mark>& marks) {
    (void)horizon_ns, (void)margin_ns, (void)marks;
  }
};

// Two threads may use one feed at once: one collects (add, count_shed, count_round_times, records_before, and the
// backlog's queries), the other analyzes (compact_chunk), so that a flood's rounds are taken and sorted while the
// last one is analyzed. finish() once neither runs. The backlog and the analysis have a lock each, taken in that order;
// a chunk holds the backlog's only while it moves its calls into the analysis, never while the analysis advances.
class AnalysisFeed {
 public:
  // Each chunk moves at most `chunk_calls` calls into the analysis: its temporary memory is a few
  // hundred bytes per call of the chunk and of what the margin keeps, so this bounds a chunk's memory and
  // duration (hence how long the capture's finish() waits for one).
  // `max_backlog` (0 = none): when more calls than this wait, the oldest ordinary ones are shed (shed()); past
  // kLoseAtShares / 2 times it, the oldest calls of any kind (lose()).
  AnalysisFeed(const StreamingOptions& options, const rules::Environment& env, size_t chunk_calls,
               size_t max_backlog = 0);

  // A round's batch: calls and ops in any order (sorted here), and every mark so far (they replace the previous, unless
  // they are fewer: take_marks).
  // `delivered_ns`: when the batch was taken (the activity flush before it); an op that ended before the previous
  // batch's time counts as late (stats). `calls_before_ns`: every call that started before it has been added (or
  // counted with count_shed): the capture's horizon; newer than `delivered_ns` when the last flush was not forced
  // (flush_period).
  void add(CallVector calls, OpVector ops, std::vector<Mark> marks, uint64_t delivered_ns, uint64_t calls_before_ns);
  bool has_backlog() const { return backlog_size() != 0; }
  // When the backlog's oldest call started (UINT64_MAX when empty).
  uint64_t backlog_front_ns() const;
  size_t backlog_size() const;
  // How far the activity records are complete, as the calls show, after a flush at `flushed_ns` (the last forced
  // one at `forced_ns`): analysis/awaited_records.h. So that ordinary flushes, which hand over only buffers whose
  // records are all complete, in any order, are enough to analyze: forced ones grow CUPTI's device-buffer pool
  // (cupti/activity.cpp). Work no watched call enqueued (calls we do not watch, calls the capture shed) gives no
  // sign of its record: when it comes after the calls around it were settled, it is counted but is no evidence
  // for them (flush_period=0 rules that out: every round forced).
  uint64_t records_before(uint64_t flushed_ns, uint64_t forced_ns);
  // Moves the backlog's next chunk (chunk_calls, twice that while more than two chunks wait) into the analysis and
  // advances it. `horizon_ns`: everything that ended before it has been added (calls and activity records); the
  // backlog's next call bounds it further. `to_horizon`: no further than `horizon_ns` when calls before it wait (the
  // pace says when: AnalyzerPace::Look::to_horizon).
  void compact_chunk(uint64_t horizon_ns, bool to_horizon = false) { take_chunk(horizon_ns, 0, to_horizon); }
  // Calls the capture shed before they reached us (its per-thread limit): counted like those shed here; `lost` of
  // them were not ordinary (AtThread::Lose): the log is then incomplete.
  void count_shed(uint64_t calls, uint64_t lost = 0);
  // Analyzes the backlog and `calls` and `ops` (the rest: what the threads and CUPTI still held), half a chunk at a
  // time (chunk_calls / 2, at least 1), and judges everything. run.unanalyzed_calls says how many were shed,
  // run.complete whether calls were lost.
  StreamingAnalysis::Result finish(CallVector calls, OpVector ops, std::vector<Mark> marks);

  FeedStats stats() const;
  // The capture's own part of a round (FeedStats::flush_ns, take_ns).
  void count_round_times(uint64_t flush_ns, uint64_t take_ns);
  // Every event given to the analysis from now on goes to `sink` too (null: none). Shed calls and the work dropped
  // with them (counted in the stats) do not.
  void set_sink(EventSink* sink) {
    std::lock_guard lock(analysis_mu_);
    sink_ = sink;
  }
  // What the analysis lets go goes to `sink` (streaming.h: ReleaseSink; null: nowhere).
  void set_release_sink(ReleaseSink* sink) {
    std::lock_guard lock(analysis_mu_);
    analysis_.set_release_sink(sink);
  }

 private:
  StreamingOptions options_;
  size_t chunk_calls_;
  // The analysis' side, under analysis_mu_: the analysis, where its events also go, and its stats (chunks, kept).
  mutable std::mutex analysis_mu_;
  StreamingAnalysis analysis_;  // has everything that started before backlog_calls_' first call
  EventSink* sink_ = nullptr;
  FeedStats chunk_stats_;
  // The backlog's side, under mu_ (taken before analysis_mu_ when both are). What the collecting thread counted for
  // the analysis (marks, calls and work not analyzed) waits here for the next chunk to hand it over.
  mutable std::mutex mu_;
  bool complete_ = true;      // false once calls were lost (lose())
  CallVector backlog_calls_;  // added, not yet analyzed, sorted by start
  OpVector backlog_ops_;
  std::vector<Mark> marks_;
  bool marks_new_ = false;
  uint64_t unanalyzed_calls_ = 0, unanalyzed_ops_ = 0;
  void hand_over_counts();                   // both locks held
  void take_marks(std::vector<Mark> marks);  // under mu_
  // A batch into the backlog (add() and finish()), its untimed work aside (untimed_), under mu_.
  void take_in(CallVector calls, OpVector ops, OpVector untimed, std::vector<Mark> marks);
  // Bounded memory when the program makes calls faster than one thread can analyze them (many threads launching
  // flat out): the oldest half of the backlog loses its sheddable() calls, which are counted (carried.calls and
  // run.unanalyzed_calls) but not analyzed. What may change: evidence that would have named a shed call's work by
  // its call, the pending blocking-stream work a legacy-stream call is judged by, activity-record disagreements.
  // If that is not enough, shed_hard() also drops the other fast calls without a stack (never state-changing
  // ones): the backlog's calls never exceed the limit after a round. drop_orphan_work() then drops the GPU work
  // no call left enqueued (also when only the capture shed calls and their work piles up past the limit).
  // The last level: calls no other level may shed still come faster than they are analyzed; the oldest beyond
  // kLoseAtShares / 2 times the limit go, whatever they are (counted, stats' lost_calls, the log incomplete).
  // Under mu_.
  void count_shed_locked(uint64_t calls, uint64_t lost = 0);
  void shed();
  void shed_hard();
  void lose();
  template <typename Drop>
  size_t shed_oldest(size_t down_to, Drop drop);
  void drop_orphan_work();
  void remember_launches(std::span<const ApiCall> calls);
  OpVector take_ops_before(uint64_t next_ns);  // under mu_
  // compact_chunk with chunks of at most `most` calls (0: as above).
  void take_chunk(uint64_t horizon_ns, size_t most, bool to_horizon);

  // Work CUPTI delivered untimed (start and end 0: cupti/activity.cpp): sorted by start it would go into the
  // analysis' window ahead of the call that enqueued it, be dropped there as nobody's work, and that call would then
  // wait for its record forever (kept in every round: 1.19M calls after 24 minutes of a run with untimed work).
  // It waits here instead until its call is in the analysis, at most kUntimedRounds rounds (a call shed or not
  // watched never comes); `second` counts the rounds it waited.
  OpVector release_untimed(bool all);               // both locks held; returns the sink's copy of what it released
  void write_sink(CallVector calls, OpVector ops);  // under the analysis' lock
  static constexpr uint32_t kUntimedRounds = 16;
  std::vector<std::pair<GpuOp, uint32_t>> untimed_;

  size_t max_backlog_;
  size_t orphans_looked_at_ = 0;           // the backlog's work that drop_orphan_work kept at its last look (shed())
  std::unordered_set<uint64_t> launched_;  // kernel functions launched so far, in start order
  FeedStats stats_;                        // the collecting side's
  uint64_t calls_before_ns_ = 0;
  // The collecting thread's alone (add, records_before): no lock.
  uint64_t last_delivered_ns_ = 0;
  std::chrono::steady_clock::time_point last_add_{};
  AwaitedRecords awaited_;
};

}  // namespace asynccheck
