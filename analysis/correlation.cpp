#include "analysis/correlation.h"

#include <algorithm>
#include <tuple>

namespace asynccheck {

void CorrelationIndex::build(const CallVector& calls, const OpVector& ops, bool work_only) {
  // Sized to the ids it will hold (a runtime call's nested driver call often has the call's own id), at most half
  // full: the table is as large as the window and chunk, so twice that room was megabytes held for nothing.
  size_t ids = calls.size();
  for (const ApiCall& c : calls) ids += c.driver_correlation_id != 0 && c.driver_correlation_id != c.correlation_id;
  by_id_.clear(ids + 1);
  for (size_t i = 0; i < calls.size(); ++i) {  // in log order: the first call with an id keeps it
    by_id_.try_emplace(calls[i].correlation_id, static_cast<uint32_t>(i));
    if (calls[i].driver_correlation_id != 0)
      by_id_.try_emplace(calls[i].driver_correlation_id, static_cast<uint32_t>(i));
  }
  producer_.assign(ops.size(), kNone);
  first_op_.assign(calls.size() + 1, 0);
  for (size_t oi = 0; oi < ops.size(); ++oi) {
    producer_[oi] = call_of(ops[oi].correlation_id);
    if (producer_[oi] != kNone && !(work_only && ops[oi].kind == GpuOpKind::Sync)) ++first_op_[producer_[oi] + 1];
  }
  for (size_t i = 0; i < calls.size(); ++i) first_op_[i + 1] += first_op_[i];
  op_list_.resize(first_op_.back());
  next_.assign(first_op_.begin(), first_op_.end() - 1);
  for (size_t oi = 0; oi < ops.size(); ++oi) {
    if (producer_[oi] != kNone && !(work_only && ops[oi].kind == GpuOpKind::Sync)) {
      op_list_[next_[static_cast<size_t>(producer_[oi])]++] = static_cast<uint32_t>(oi);
    }
  }
}

int64_t CorrelationIndex::call_of(uint64_t correlation_id) const {
  const uint32_t* call = by_id_.find(correlation_id);
  return call == nullptr ? kNone : *call;
}

int64_t first_work_op(std::span<const uint32_t> own, const OpVector& ops) {
  int64_t best = CorrelationIndex::kNone;
  for (uint32_t oi : own) {
    const GpuOp& op = ops[oi];
    if (op.kind == GpuOpKind::Sync) continue;
    if (best == CorrelationIndex::kNone) {
      best = oi;
      continue;
    }
    const GpuOp& b = ops[static_cast<size_t>(best)];
    // Untimed work (start 0: cupti/activity.cpp) only when there is nothing else: it says nothing of when.
    if (std::make_tuple(op.start_ns == 0, op.start_ns, ~op.end_ns, op.stream_id) <
        std::make_tuple(b.start_ns == 0, b.start_ns, ~b.end_ns, b.stream_id)) {
      best = oi;
    }
  }
  return best;
}

}  // namespace asynccheck
