// Which watched calls still wait for the activity record of the GPU work they enqueued, and so how far the records
// are complete: the streaming analysis' records horizon (AnalysisFeed::records_before). Pure, no CUDA.
//
// CUPTI's ordinary flush hands over only the buffers whose records are all complete, and in any order, so "every
// record of work finished before T has come" cannot be read from the flush. It can be read from the calls: a call
// that enqueued work (expects_work_record) and whose record has not come is awaited, and the oldest awaited call's
// start bounds what may be missing. A call whose work gets several records (gets_several_records: a graph launch,
// a record per node; a batch copy, one per copy) stays awaited after its first until work enqueued in the same
// stream by a call made after it returned ended before a forced flush (stream order: its work had ended; the
// forced flush delivered every record of work finished before it). Host order, not correlation ids: those are
// handed out as calls begin (two threads' calls may enqueue in the other order) and wrap at 2^32. A call still
// awaited kRecordOverdueNs after it returned, with a forced flush since, is given up on (a launch captured into a
// graph, an empty graph, a record CUPTI lost).
//
// Incremental: each call and each record is looked at when it comes (a hash lookup); each round looks at the calls
// still awaited, the records that came before their call (kept a few rounds), and the records of streams with a
// call of several records awaited (until a forced flush). Recomputed from the feed's whole backlog every round
// instead, a flood of 16 threads kept 300,000 calls there and the recomputation cost 14 ms a round.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/events.h"

namespace asynccheck {

// Whether `c` enqueued GPU work that gets an activity record: a launch, a copy or a memset of some bytes, a graph
// launch (a record per node), that succeeded. A command captured into a graph gets none (the analysis knows which
// were captured; AwaitedRecords waits kRecordOverdueNs for them at most).
bool expects_work_record(const ApiCall& c);

// Whether the work `c` enqueued comes in several activity records, one by one: a graph launch (a record per node),
// a batch copy (one per copy: ApiCall::flags).
bool gets_several_records(const ApiCall& c);

// GPU work whose record has not come this long after its call returned is taken as lost: it no longer holds back
// what waits for it (AwaitedRecords; the analysis: legacy-stream commands). Queued work comes well before (a GPU
// shared by four processes ran ~20 ms behind the host; ordinary flushes delivered records up to 278 ms late).
constexpr uint64_t kRecordOverdueNs = 10'000'000'000;

class AwaitedRecords {
 public:
  // A round's batch: its calls first (any order), then the records it brought (any order). A record may come
  // before its call (the call was still in flight when the round took the threads' calls): kept kEarlyRounds
  // rounds for it.
  void add_calls(const CallVector& calls);
  void add_records(const OpVector& ops);
  // After a flush at `flushed_ns`, the last forced one at `forced_ns`: the start of the oldest awaited call,
  // `flushed_ns` when none is, never before `forced_ns`. Gives up on the calls awaited kRecordOverdueNs before
  // `forced_ns`.
  uint64_t before(uint64_t flushed_ns, uint64_t forced_ns);

  size_t awaited() const { return calls_.size(); }
  // Records kept until a forced flush says whether they ended before it (for tests: bounded).
  size_t tracked_records() const {
    size_t n = 0;
    for (const auto& [stream, records] : after_) n += records.size();
    return n;
  }
  uint64_t overdue() const { return overdue_; }

 private:
  static constexpr uint32_t kEarlyRounds = 16;
  struct Awaited {
    uint64_t start_ns = 0, end_ns = 0;
    uint64_t driver_id = 0;
    bool several = false;  // gets_several_records
    uint32_t stream = 0;   // several, with a timed record: the stream of its work that started first
    uint64_t first_start_ns = UINT64_MAX;
  };
  struct Early {
    uint32_t rounds = 0;
    uint32_t stream = 0;
    uint64_t start_ns = 0;
  };
  void record(uint64_t key, Awaited& a, uint32_t stream, uint64_t start_ns);
  void forget(uint64_t key);
  void unlist(uint64_t key, uint32_t stream);  // from several_

  std::unordered_map<uint64_t, Awaited> calls_;    // by the call's correlation id
  std::unordered_map<uint64_t, uint64_t> driver_;  // nested driver call's id -> the call's correlation id
  std::unordered_map<uint64_t, Early> early_;      // records no awaited call claimed yet, by correlation id
  // Calls of several records with a timed one, per stream; for those streams only, the records of awaited calls
  // that came since (end, the start of the call that enqueued it), and the latest start among those that ended
  // before the last forced flush.
  std::unordered_map<uint32_t, std::unordered_set<uint64_t>> several_;
  std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> after_;
  std::unordered_map<uint32_t, uint64_t> done_by_;
  uint64_t overdue_ = 0;
};

}  // namespace asynccheck
