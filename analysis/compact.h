// Compaction: bounded memory in long runs. Replaces an EventLog by a smaller one that analyzes to exactly the
// same report (findings, their evidence, per-site counts, not_observed, calls_watched, gpu_operations,
// context_creation_ns, kind_disagreements), by dropping the calls and GPU operations that can no longer change
// anything and carrying what they contributed (EventLog::carried). Pure, no CUDA: the capture runs it as the run
// goes; the tests run it on recordings and fabricated logs.
//
// Which calls stay, for a horizon H (everything that ended before H has been captured, activity included):
//  - judged: every call that ended after H - margin ("unsettled": the calls around it may still arrive), every
//    call that enqueued GPU work whose record has not arrived (a graph launch, a record per node: until the calls
//    after it show that its graph ended before H - margin), every legacy-stream command whose work ended after
//    H - margin or after a call in a blocking stream still waiting for its record returned (whether it serializes
//    reads the blocking-stream work in flight when it started, its delay out the one that started when its own
//    ended; a record 10 s overdue counts as lost), and the calls holding the first samples_per_site findings of
//    each (stack, API, rule, NVTX range) key (the first finding of a key is the example a report shows). Their
//    findings and counts are computed again from the smaller log.
//  - context_only: calls that create state later calls' descriptions read (stream creation and destruction, event
//    creation, stream-ordered allocations not yet paired with their stream-ordered free, frees of stream-ordered
//    pointers, the first launch of each function, the calls that changed the capture state: capture begin and
//    end, a stream joining a capture, an event recorded into or out of one), and the calls that enqueued a GPU
//    operation that stays. A captured call never waits for work: capture enqueues nothing.
// Which GPU operations stay: every one that ended after H - margin and the one before it in its stream; per stream
// the last to end (the one before work whose record is still to come); those of judged calls and the one before
// each in its stream; every one a judged call's analysis decides on: of the ops ending while it held the host or
// within the release window after, the ones ending closest to its return; per stream, the op in flight when it
// started that ends last; those around its legacy-stream work. Not every op its analysis reads: behind a busy GPU
// that was a thousand a call. And the first operation of each kernel name (call sites skip kernel frames by name).
//
// The result is checked before it replaces the log: the smaller log is analyzed and every judged call must get the
// same description and the same findings (evidence included). If not, the log is left as it was (correct, only
// larger) and compact() returns false.
//
// A compacted log saved as a recording keeps `carried` and `context_only` (recording.h) and analyzes to the same
// report, but only at the threshold it was compacted for, and it lacks what a trace draws: the capture does not
// compact when a trace is asked for, and `asynccheck analyze` refuses another threshold or a trace for it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "analysis/analyze.h"
#include "analysis/events.h"

namespace asynccheck {

struct CompactOptions {
  AnalysisOptions analysis;  // must be the options the final analysis will use (threshold, windows)
  // A call that ended more than this before the horizon is settled, and ops that ended before the horizon less
  // this are no longer read by calls still to come. It covers activity records of finished work that the flush
  // before compaction has not delivered yet, and the skew between GPU and CPU timestamps; GPU work queued for
  // longer does not need it (a call whose work has no record yet stays, however old). Kept small on purpose:
  // everything captured within the margin stays, so at 1M calls/s 50 ms is ~50k calls (2 s would be 2M calls,
  // i.e. no bound at all for a launch-bound loop).
  uint64_t margin_ns = 50'000'000;
  // Findings kept as calls per (stack, API, rule, NVTX range); the rest are counted in EventLog::carried. A
  // report's median for a site is then the median of the kept samples.
  size_t samples_per_site = 64;
};

struct CompactStats {
  size_t calls_before = 0, calls_after = 0;
  size_t ops_before = 0, ops_after = 0;
};

// Compacts `log` in place for horizon `horizon_ns` (CUPTI timebase). True when it was replaced by the smaller log;
// false when nothing could be dropped or the check failed (the log is then unchanged).
bool compact(EventLog& log, uint64_t horizon_ns, const CompactOptions& options, CompactStats* stats = nullptr);

// Whether compaction dropped or demoted anything in `log` (then it only analyzes at its run's threshold).
bool compacted(const EventLog& log);

}  // namespace asynccheck
