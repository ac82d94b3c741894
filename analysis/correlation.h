// Which watched call enqueued each GPU operation. CUPTI gives a call and the activity records of the work it
// enqueued the same correlation id; a runtime call's records may carry its nested driver call's id instead
// (ApiCall::driver_correlation_id). Flat arrays and a flat hash table, rebuilt in place: the analysis builds this
// for every step over its window (analyze.cpp), where a node per call, then a sort of every id, was most of a step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "analysis/events.h"
#include "analysis/flat_map.h"

namespace asynccheck {

class CorrelationIndex {
 public:
  // `work_only`: leave synchronization records out of ops_of() (they mark waits, not enqueued work); producer()
  // answers for every op either way.
  CorrelationIndex() = default;
  CorrelationIndex(const CallVector& calls, const OpVector& ops, bool work_only) { build(calls, ops, work_only); }
  // Indexes `calls` and `ops` anew, reusing the memory of the previous ones.
  void build(const CallVector& calls, const OpVector& ops, bool work_only);

  static constexpr int64_t kNone = -1;
  // The call with this correlation id (its own or its nested driver call's), or kNone. When two calls claim one
  // id, the first in the log's order.
  int64_t call_of(uint64_t correlation_id) const;
  // The call that enqueued op `op`, or kNone (work of a call we do not watch).
  int64_t producer(size_t op) const { return producer_[op]; }
  // The ops call `call` enqueued, in the log's order.
  std::span<const uint32_t> ops_of(size_t call) const {
    return {op_list_.data() + first_op_[call], op_list_.data() + first_op_[call + 1]};
  }

 private:
  FlatMap<uint32_t> by_id_;         // correlation id -> the first call with it
  std::vector<int64_t> producer_;   // per op
  std::vector<uint32_t> first_op_;  // per call, into op_list_; one more at the end
  std::vector<uint32_t> op_list_;   // op indices grouped by call
  std::vector<uint32_t> next_;      // build()'s cursor per call, kept for its memory
};

// A call's first work op, the one its stream and its legacy-stream judgement read (analyze.cpp): the earliest to
// start, of those the one that ends last, then the lowest stream id; an untimed one only if all are. Not the first in the log: graph nodes that start
// together come in the order CUPTI delivered their records, which compaction in rounds changes. kNone if it has no
// work op (synchronization records are skipped).
int64_t first_work_op(std::span<const uint32_t> own, const OpVector& ops);

}  // namespace asynccheck
