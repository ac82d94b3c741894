// Which watched calls still wait for the activity record of the GPU work they enqueued, and so how far the records
// are complete: the running compaction's records horizon (Compactor::records_before). Pure, no CUDA.
//
// CUPTI's ordinary flush hands over only the buffers whose records are all complete, and in any order, so "every
// record of work finished before T has come" cannot be read from the flush. It can be read from the calls: a call
// that enqueued work (expects_work_record) and whose record has not come is awaited, and the oldest awaited call's
// start bounds what may be missing. A graph launch gets a record per node, one by one: it stays awaited after its
// first record until work its stream ran after it ended before a forced flush (stream order: the graph had ended;
// the forced flush delivered every record of work finished before it). A call awaited kRecordOverdueNs after it
// returned is given up on (a launch captured into a graph, an empty graph, a record CUPTI lost).
//
// Incremental: each call and each record is looked at once, when it comes (a hash lookup); each round looks only at
// the calls still awaited. Recomputed from the compactor's whole backlog every round, a flood of 16 threads kept
// 300,000 calls there and the recomputation cost 14 ms a round.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analysis/events.h"

namespace asynccheck {

// Whether `c` enqueued GPU work that gets an activity record: a launch, a copy or a memset of some bytes, a graph
// launch (a record per node), that succeeded. A command captured into a graph gets none (compact.cpp knows which
// were captured; AwaitedRecords waits kRecordOverdueNs for them at most).
bool expects_work_record(const ApiCall& c);

// GPU work whose record has not come this long after its call returned is taken as lost: it no longer holds back
// what waits for it (AwaitedRecords; compact.cpp: legacy-stream commands). Queued work comes well before (a GPU
// shared by four processes ran ~20 ms behind the host; ordinary flushes delivered records up to 278 ms late).
constexpr uint64_t kRecordOverdueNs = 10'000'000'000;

class AwaitedRecords {
 public:
  // A round's batch: its calls first (any order), then the records it brought (any order). A record may come
  // before its call (the call was still in flight when the round took the threads' calls): kept kEarlyRounds
  // rounds for it.
  void add_calls(const std::vector<ApiCall>& calls);
  void add_records(const std::vector<GpuOp>& ops);
  // After a flush at `flushed_ns`, the last forced one at `forced_ns`: the start of the oldest awaited call,
  // `flushed_ns` when none is, never before `forced_ns`.
  uint64_t before(uint64_t flushed_ns, uint64_t forced_ns);

  size_t awaited() const { return calls_.size(); }
  uint64_t overdue() const { return overdue_; }

 private:
  static constexpr uint32_t kEarlyRounds = 16;
  struct Awaited {
    uint64_t start_ns = 0, end_ns = 0;
    uint64_t last_id = 0;    // the larger of its correlation ids: later work has a larger one
    bool graph = false;
    bool has_record = false;  // a graph launch: one of its nodes' records came
    uint32_t stream = 0;      // a graph launch with a record: the stream of its node that started first
    uint64_t first_start_ns = UINT64_MAX;
    uint64_t driver_id = 0;
  };
  struct Early {
    uint32_t rounds = 0;
    uint32_t stream = 0;
    uint64_t start_ns = 0;
  };
  void record(uint64_t key, Awaited& a, uint32_t stream, uint64_t start_ns);
  void forget(uint64_t key);

  std::unordered_map<uint64_t, Awaited> calls_;   // by the call's correlation id
  std::unordered_map<uint64_t, uint64_t> driver_;  // nested driver call's id -> the call's correlation id
  std::unordered_map<uint64_t, Early> early_;      // records no awaited call claimed yet, by correlation id
  // Graph launches with a record, per stream; and per such stream, the records (end, correlation id) that came
  // since the last before(), to find work that ran after a graph.
  std::unordered_map<uint32_t, std::unordered_set<uint64_t>> graphs_;
  std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> after_graphs_;
  std::unordered_map<uint32_t, uint64_t> done_by_;  // per stream: the latest id whose work ended before a forced flush
  uint64_t overdue_ = 0;
};

}  // namespace asynccheck
