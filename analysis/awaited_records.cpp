#include "analysis/awaited_records.h"

#include <algorithm>
#include <iterator>

namespace asynccheck {

bool expects_work_record(const ApiCall& c) {
  using rules::ApiKind;
  switch (c.call.api) {
    case ApiKind::Copy:
    case ApiKind::Memset: return c.result == 0 && c.call.bytes != 0;  // an empty copy enqueues nothing
    case ApiKind::KernelLaunch:
    case ApiKind::GraphLaunch: return c.result == 0;
    default: return false;
  }
}

void AwaitedRecords::add_calls(const std::vector<ApiCall>& calls) {
  for (const ApiCall& c : calls) {
    if (!expects_work_record(c)) continue;
    Awaited a;
    a.start_ns = c.start_ns;
    a.end_ns = c.end_ns;
    a.last_id = std::max(c.correlation_id, c.driver_correlation_id);
    a.graph = c.call.api == rules::ApiKind::GraphLaunch;
    a.driver_id = c.driver_correlation_id;
    // Its record came first (the call was still in flight then).
    auto early = early_.find(c.correlation_id);
    if (early == early_.end() && c.driver_correlation_id != 0) early = early_.find(c.driver_correlation_id);
    if (early != early_.end() && !a.graph) {
      early_.erase(early);
      continue;
    }
    const uint64_t key = c.correlation_id;
    Awaited& slot = calls_[key] = a;
    if (a.driver_id != 0) driver_[a.driver_id] = key;
    if (early != early_.end()) {
      const Early e = early->second;
      early_.erase(early);
      record(key, slot, e.stream, e.start_ns);
    }
  }
}

void AwaitedRecords::record(uint64_t key, Awaited& a, uint32_t stream, uint64_t start_ns) {
  a.has_record = true;
  // Untimed (start 0: cupti/activity.cpp) says nothing of when, nor which node started first.
  if (start_ns == 0 || start_ns >= a.first_start_ns) return;
  if (a.first_start_ns != UINT64_MAX) graphs_[a.stream].erase(key);
  a.first_start_ns = start_ns;
  a.stream = stream;
  graphs_[stream].insert(key);
}

void AwaitedRecords::forget(uint64_t key) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  const Awaited& a = it->second;
  if (a.driver_id != 0) driver_.erase(a.driver_id);
  if (a.graph && a.first_start_ns != UINT64_MAX) {
    auto g = graphs_.find(a.stream);
    if (g != graphs_.end()) {
      g->second.erase(key);
      if (g->second.empty()) graphs_.erase(g);
    }
  }
  calls_.erase(it);
}

void AwaitedRecords::add_records(const std::vector<GpuOp>& ops) {
  for (const GpuOp& op : ops) {
    if (op.kind == GpuOpKind::Sync) continue;  // marks a wait, not enqueued work
    uint64_t key = op.correlation_id;
    auto it = calls_.find(key);
    if (it == calls_.end()) {
      if (auto d = driver_.find(op.correlation_id); d != driver_.end()) {
        key = d->second;
        it = calls_.find(key);
      }
    }
    if (it == calls_.end()) {
      Early& e = early_[op.correlation_id];
      if (op.start_ns != 0 && (e.start_ns == 0 || op.start_ns < e.start_ns)) {
        e.start_ns = op.start_ns;
        e.stream = op.stream_id;
      }
      continue;
    }
    if (it->second.graph) {
      record(key, it->second, op.stream_id, op.start_ns);
    } else {
      forget(key);
    }
  }
  // Work in a stream that ran a graph still awaited: once it ended before a forced flush, that graph had ended.
  if (graphs_.empty()) return;
  for (const GpuOp& op : ops) {
    if (op.kind == GpuOpKind::Sync || op.start_ns == 0 || !graphs_.contains(op.stream_id)) continue;
    after_graphs_[op.stream_id].emplace_back(op.end_ns, op.correlation_id);
  }
}

uint64_t AwaitedRecords::before(uint64_t flushed_ns, uint64_t forced_ns) {
  for (auto s = after_graphs_.begin(); s != after_graphs_.end();) {
    uint64_t& done = done_by_[s->first];
    std::erase_if(s->second, [&](const std::pair<uint64_t, uint64_t>& r) {
      if (r.first >= forced_ns) return false;  // may have ended after a graph's last node still to come
      done = std::max(done, r.second);
      return true;
    });
    auto g = graphs_.find(s->first);
    if (g == graphs_.end()) {
      s = after_graphs_.erase(s);
      continue;
    }
    std::vector<uint64_t> ended;
    for (uint64_t key : g->second) {
      if (done > calls_.at(key).last_id) ended.push_back(key);
    }
    ++s;  // forget() may erase this stream's graphs, never after_graphs_
    for (uint64_t key : ended) forget(key);
  }
  uint64_t oldest = flushed_ns;
  std::vector<uint64_t> overdue;
  for (const auto& [key, a] : calls_) {
    if (a.end_ns + kRecordOverdueNs < flushed_ns) {
      overdue.push_back(key);
    } else {
      oldest = std::min(oldest, a.start_ns);
    }
  }
  overdue_ += overdue.size();
  for (uint64_t key : overdue) forget(key);
  for (auto e = early_.begin(); e != early_.end();) {
    e = ++e->second.rounds > kEarlyRounds ? early_.erase(e) : std::next(e);
  }
  return std::max(oldest, forced_ns);
}

}  // namespace asynccheck
