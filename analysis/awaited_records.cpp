#include "analysis/awaited_records.h"

#include <algorithm>
#include <iterator>

namespace asynccheck {

bool expects_work_record(const ApiCall& c) {
  if (!rules::traits(c.call.api).expects_record || c.result != 0) return false;
  const bool transfer = c.call.api == rules::ApiKind::Copy || c.call.api == rules::ApiKind::Memset;
  return !transfer || c.call.bytes != 0;  // an empty copy enqueues nothing
}

bool gets_several_records(const ApiCall& c) {
  return c.call.api == rules::ApiKind::GraphLaunch || (c.call.api == rules::ApiKind::Copy && c.flags > 1);
}

void AwaitedRecords::add_calls(const CallVector& calls) {
  for (const ApiCall& c : calls) {
    if (!expects_work_record(c)) continue;
    Awaited a;
    a.start_ns = c.start_ns;
    a.end_ns = c.end_ns;
    a.several = gets_several_records(c);
    a.driver_id = c.driver_correlation_id;
    // Its record came first (the call was still in flight then).
    auto early = early_.find(c.correlation_id);
    if (early == early_.end() && c.driver_correlation_id != 0) early = early_.find(c.driver_correlation_id);
    if (early != early_.end() && !a.several) {
      early_.erase(early);
      continue;
    }
    const uint64_t key = c.correlation_id;
    forget(key);  // the same id again (ids wrap at 2^32): the older call's entry goes, with what points at it
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
  // Untimed (start 0: cupti/activity.cpp) says nothing of when, nor which work started first.
  if (start_ns == 0 || start_ns >= a.first_start_ns) return;
  if (a.first_start_ns != UINT64_MAX) unlist(key, a.stream);
  a.first_start_ns = start_ns;
  a.stream = stream;
  several_[stream].insert(key);
}

void AwaitedRecords::forget(uint64_t key) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return;
  const Awaited& a = it->second;
  if (a.driver_id != 0) driver_.erase(a.driver_id);
  if (a.several && a.first_start_ns != UINT64_MAX) unlist(key, a.stream);
  calls_.erase(it);
}

void AwaitedRecords::unlist(uint64_t key, uint32_t stream) {
  auto s = several_.find(stream);
  if (s == several_.end()) return;
  s->second.erase(key);
  if (s->second.empty()) several_.erase(s);
}

void AwaitedRecords::add_records(const OpVector& ops) {
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
    // Work a known call enqueued, in a stream where a call of several records is awaited: it may show that call's
    // work had ended (before()). Noted before the call is forgotten, with when that call started.
    if (op.start_ns != 0 && several_.contains(op.stream_id))
      after_[op.stream_id].emplace_back(op.end_ns, it->second.start_ns);
    if (it->second.several) {
      record(key, it->second, op.stream_id, op.start_ns);
    } else {
      forget(key);
    }
  }
}

uint64_t AwaitedRecords::before(uint64_t flushed_ns, uint64_t forced_ns) {
  for (auto s = after_.begin(); s != after_.end();) {
    auto waiting = several_.find(s->first);
    if (waiting == several_.end()) {  // nothing of several records awaited in that stream any more
      done_by_.erase(s->first);
      s = after_.erase(s);
      continue;
    }
    const uint32_t stream = s->first;
    uint64_t& done = done_by_[stream];
    std::erase_if(s->second, [&](const std::pair<uint64_t, uint64_t>& r) {
      if (r.first >= forced_ns) return false;  // may have ended after work still to come
      done = std::max(done, r.second);
      return true;
    });
    // Enqueued behind it by a call made after it returned, and ended before a forced flush.
    std::vector<uint64_t> ended;
    for (uint64_t key : waiting->second) {
      auto c = calls_.find(key);
      if (c == calls_.end() || done > c->second.end_ns) ended.push_back(key);
    }
    ++s;  // forget() may erase this stream from several_, never from after_
    for (uint64_t key : ended) {
      if (calls_.contains(key)) {
        forget(key);
      } else {
        unlist(key, stream);
      }
    }
  }
  uint64_t oldest = flushed_ns;
  std::vector<uint64_t> overdue;
  for (const auto& [key, a] : calls_) {
    // Given up on only with a forced flush since: a finished record may wait in a buffer of CUPTI's behind an
    // unfinished one for as long as that one runs.
    if (a.end_ns + kRecordOverdueNs < forced_ns) {
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
