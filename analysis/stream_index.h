// Per-stream order of a log's GPU operations, for the analysis and the compaction. Pure.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/events.h"

namespace asynccheck {

// Per stream, the op that ended last at or before another op started (the first in start order among equal ends,
// never that op itself): what held that op back in its stream (analyze.cpp), and what compaction keeps for it
// (compact.cpp). O(log n) a query: a scan of the stream's ops per query made the analysis of a chunk quadratic in
// a long run's busiest stream.
class StreamIndex {
 public:
  static constexpr int64_t kNone = -1;

  explicit StreamIndex(const OpVector& ops) : ops_(ops) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].kind != GpuOpKind::Sync) by_stream_[ops[i].stream_id].push_back(i);
    }
    for (auto& [stream, list] : by_stream_) {
      // Start order is (start, index): the analyzer sorts by start stably. Ties on end keep start order.
      std::sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        return std::tie(ops[a].end_ns, ops[a].start_ns, a) < std::tie(ops[b].end_ns, ops[b].start_ns, b);
      });
    }
  }

  int64_t previous(size_t self) const {
    const GpuOp& op = ops_[self];
    if (op.kind == GpuOpKind::Sync) return kNone;
    const std::vector<size_t>& list = by_stream_.at(op.stream_id);
    const uint64_t t = op.start_ns;
    auto end_lt = [&](size_t oi, uint64_t v) { return ops_[oi].end_ns < v; };
    auto p = std::upper_bound(list.begin(), list.end(), t, [&](uint64_t v, size_t oi) { return v < ops_[oi].end_ns; });
    while (p != list.begin()) {
      const uint64_t e = ops_[*(p - 1)].end_ns;
      auto q = std::lower_bound(list.begin(), p, e, end_lt);  // first of the group with the largest end <= t
      for (auto it = q; it != p; ++it) {
        if (*it != self) return static_cast<int64_t>(*it);
      }
      p = q;  // the group was only `self`: the group before
    }
    return kNone;
  }

  // Per stream, the ops that ended last (all of them, for ties); untimed work (start 0) is nobody's previous.
  std::vector<size_t> last_to_end() const {
    std::vector<size_t> out;
    for (const auto& [stream, list] : by_stream_) {
      const uint64_t last = ops_[list.back()].end_ns;
      for (auto it = list.rbegin(); it != list.rend() && ops_[*it].end_ns == last; ++it) {
        if (ops_[*it].start_ns != 0) out.push_back(*it);
      }
    }
    return out;
  }

 private:
  const OpVector& ops_;
  std::unordered_map<uint32_t, std::vector<size_t>> by_stream_;
};

}  // namespace asynccheck
