#include "analysis/feed.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <utility>

#include "analysis/sorted_merge.h"

namespace asynccheck {
namespace {

uint64_t elapsed_ns(std::chrono::steady_clock::time_point since) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count());
}

// CUPTI's record of work it could not time (cupti/activity.cpp, count_untimed): never evidence.
bool untimed_op(const GpuOp& op) { return op.kind != GpuOpKind::Sync && op.start_ns == 0; }

// Takes the untimed work out of `ops` (AnalysisFeed::untimed_ says where it waits instead).
OpVector take_untimed(OpVector& ops) {
  OpVector untimed;
  if (std::any_of(ops.begin(), ops.end(), untimed_op)) {  // rare: no pass that moves every op otherwise
    const auto from = std::stable_partition(ops.begin(), ops.end(), [](const GpuOp& op) { return !untimed_op(op); });
    untimed.assign(std::make_move_iterator(from), std::make_move_iterator(ops.end()));
    ops.erase(from, ops.end());
  }
  return untimed;
}

}  // namespace

AnalysisFeed::AnalysisFeed(const StreamingOptions& options, const rules::Environment& env, size_t chunk_calls,
                           size_t max_backlog)
    : options_(options),
      chunk_calls_(std::max<size_t>(1, chunk_calls)),
      analysis_(options, env),
      max_backlog_(max_backlog == 0 ? 0 : std::max<size_t>(2, max_backlog)) {}  // shedding keeps half: at least 1

void AnalysisFeed::remember_launches(std::span<const ApiCall> calls) {
  for (const ApiCall& c : calls) {
    if (c.call.api == rules::ApiKind::KernelLaunch) launched_.insert(c.function);
  }
}

bool on_legacy_stream(const ApiCall& c) {
  return rules::enqueues_stream_work(c.call.api) &&
         rules::default_stream_named(c.call, c.stream) == rules::StreamKind::LegacyDefault;
}

bool sheddable(const ApiCall& c, bool function_launched_before, uint64_t threshold_ns) {
  // No stack usually means fast, but an unwind can fail: the time held decides.
  if (c.stack != 0 || c.result != 0 || c.context_only || c.end_ns - c.start_ns >= threshold_ns) return false;
  if (on_legacy_stream(c)) return false;
  switch (c.call.api) {
    case rules::ApiKind::KernelLaunch: return function_launched_before;
    case rules::ApiKind::Copy:
    case rules::ApiKind::Memset:
    case rules::ApiKind::StreamQuery: return true;
    default: return false;
  }
}

bool sheddable_hard(const ApiCall& c, uint64_t threshold_ns) {
  return c.stack == 0 && !rules::changes_state(c.call.api) && !on_legacy_stream(c) &&
         c.end_ns - c.start_ns < threshold_ns;
}

AtThread at_thread(const ApiCall& c, size_t buffered, size_t share, bool function_launched_before,
                   uint64_t threshold_ns) {
  if (share == 0 || buffered < share) return AtThread::Keep;
  if (buffered >= kLoseAtShares * share) return AtThread::Lose;
  if (sheddable(c, function_launched_before, threshold_ns)) return AtThread::Shed;
  if (buffered >= 2 * share && sheddable_hard(c, threshold_ns)) return AtThread::Shed;
  return AtThread::Keep;
}

void AnalysisFeed::count_shed(uint64_t calls, uint64_t lost) {
  std::lock_guard lock(mu_);
  count_shed_locked(calls, lost);
}

void AnalysisFeed::count_shed_locked(uint64_t calls, uint64_t lost) {
  stats_.shed_calls += calls;
  stats_.lost_calls += lost;
  unanalyzed_calls_ += calls;
  if (lost != 0) complete_ = false;
}

// Marks only accumulate: fewer than were given before come from a caller that could not read them (the capture's
// finish() when a thread stopped holding its lock), and the final judgement must not lose them (the time a call
// spent creating the context would read as the call's own cost).
void AnalysisFeed::take_marks(std::vector<Mark> marks) {
  if (marks.size() < marks_.size()) return;
  marks_ = std::move(marks);
  marks_new_ = true;
}

// What the collecting side counted, to the analysis: with a chunk, and at the end.
void AnalysisFeed::hand_over_counts() {
  if (marks_new_) analysis_.set_marks(marks_);
  marks_new_ = false;
  analysis_.count_unanalyzed(std::exchange(unanalyzed_calls_, 0), std::exchange(unanalyzed_ops_, 0));
}

uint64_t AnalysisFeed::backlog_front_ns() const {
  std::lock_guard lock(mu_);
  return backlog_calls_.empty() ? std::numeric_limits<uint64_t>::max() : backlog_calls_.front().start_ns;
}

size_t AnalysisFeed::backlog_size() const {
  std::lock_guard lock(mu_);
  return backlog_calls_.size();
}

void AnalysisFeed::count_round_times(uint64_t flush_ns, uint64_t take_ns) {
  std::lock_guard lock(mu_);
  stats_.flush_ns += flush_ns;
  stats_.take_ns += take_ns;
}

FeedStats AnalysisFeed::stats() const {
  std::lock_guard lock(mu_);
  std::lock_guard alock(analysis_mu_);
  FeedStats s = stats_;
  const FeedStats& c = chunk_stats_;
  s.chunks = c.chunks;
  s.largest_chunk = c.largest_chunk;
  s.compact_ns = c.compact_ns;
  s.longest_chunk_ns = c.longest_chunk_ns;
  s.kept_calls = c.kept_calls;
  s.kept_ops = c.kept_ops;
  s.compacted_calls = c.compacted_calls;
  s.peak_window_calls = c.peak_window_calls;
  s.peak_window_ops = c.peak_window_ops;
  return s;
}

// Removes, among the oldest calls of the backlog down to `down_to` calls, those `drop` picks; returns how many, for
// the caller to count (count_shed). Shedding down to half the limit, a program that stays ahead sheds once per
// half-limit of calls, not every round. In place: this runs when memory is already at its limit.
template <typename Drop>
size_t AnalysisFeed::shed_oldest(size_t down_to, Drop drop) {
  const size_t excess = backlog_calls_.size() - std::min(down_to, backlog_calls_.size());
  size_t out = 0;
  for (size_t i = 0; i < backlog_calls_.size(); ++i) {
    const ApiCall& c = backlog_calls_[i];
    if (i < excess && drop(c)) continue;
    backlog_calls_[out++] = c;
  }
  const size_t dropped = backlog_calls_.size() - out;
  backlog_calls_.resize(out);
  return dropped;
}

void AnalysisFeed::shed() {
  if (max_backlog_ == 0) return;
  if (backlog_calls_.size() <= max_backlog_) {
    // The work of calls the capture shed (its per-thread limit) piles up here though the calls do not. The work of
    // calls still here waits too (compact_chunk): looked for again only once the work doubled since what the last
    // look kept, not every round of a flood whose calls each have many records (graph launches).
    if (backlog_ops_.size() > std::max(max_backlog_, 2 * orphans_looked_at_)) {
      drop_orphan_work();
      orphans_looked_at_ = backlog_ops_.size();
    }
    return;
  }
  count_shed_locked(shed_oldest(max_backlog_ / 2, [&](const ApiCall& c) {
    // A launch's function is remembered either way: the first launch of one stays and makes the next sheddable.
    const bool launched_before = c.call.api == rules::ApiKind::KernelLaunch && !launched_.insert(c.function).second;
    return sheddable(c, launched_before, options_.analysis.threshold_ns);
  }));
  if (backlog_calls_.size() > max_backlog_) shed_hard();
  if (backlog_calls_.size() > kLoseAtShares / 2 * max_backlog_) lose();
  drop_orphan_work();
}

// GPU work that started before every call that could have enqueued it was added, and that no call here enqueued:
// its call was shed (here or by the capture), or is one we do not watch. Dropped (counted in carried.ops) once
// shedding started: evidence about other streams' work may go with it, as with the shed calls.
// The ids in one sorted vector, not a hash set: this runs every round of a flood, over up to a few hundred thousand
// calls, and a set's node per id was that many allocations a round on the analysis thread.
void AnalysisFeed::drop_orphan_work() {
  std::vector<uint64_t> ids;
  auto add_ids = [&](const CallVector& calls) {
    for (const ApiCall& c : calls) {
      ids.push_back(c.correlation_id);
      if (c.driver_correlation_id != 0) ids.push_back(c.driver_correlation_id);
    }
  };
  {
    std::lock_guard alock(analysis_mu_);  // a chunk in the analysis holds it (its calls are in neither place else)
    ids.reserve(2 * (analysis_.window().calls.size() + backlog_calls_.size()));
    add_ids(analysis_.window().calls);
  }
  add_ids(backlog_calls_);
  std::sort(ids.begin(), ids.end());
  size_t kept = 0;
  for (size_t i = 0; i < backlog_ops_.size(); ++i) {
    GpuOp& op = backlog_ops_[i];
    if (op.start_ns < calls_before_ns_ && !std::binary_search(ids.begin(), ids.end(), op.correlation_id)) {
      ++unanalyzed_ops_;
      ++stats_.dropped_ops;
      continue;
    }
    if (kept != i) backlog_ops_[kept] = std::move(op);
    ++kept;
  }
  backlog_ops_.resize(kept);
}

// Still over the limit once the ordinary calls are gone (they were not enough: event records, syncs that
// returned at once): the oldest fast calls without a stack go too, state-changing ones aside; their work goes with
// the orphans (drop_orphan_work). What stays is every call that held the host or may block (those have stacks) and
// every call later descriptions read; what is lost is evidence about the shed part's work.
void AnalysisFeed::shed_hard() {
  count_shed_locked(shed_oldest(max_backlog_ / 2,
                                [&](const ApiCall& c) { return sheddable_hard(c, options_.analysis.threshold_ns); }));
}

// Bounded memory whatever the program does (many threads flooding us with legacy-stream launches, or calls that
// each held the host a little): what is lost may be findings, so the log says it is incomplete.
void AnalysisFeed::lose() {
  const size_t lost = shed_oldest(kLoseAtShares / 2 * max_backlog_, [](const ApiCall&) { return true; });
  count_shed_locked(lost, /*lost=*/lost);
}

void AnalysisFeed::add(CallVector calls, OpVector ops, std::vector<Mark> marks, uint64_t delivered_ns,
                       uint64_t calls_before_ns) {
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t gap_ns = last_add_ == std::chrono::steady_clock::time_point{} ? 0 : elapsed_ns(last_add_);
  last_add_ = t0;
  // The collecting side's own work, outside the locks: the records horizon, and the round sorted (merge_into then
  // finds it so).
  awaited_.add_calls(calls);
  awaited_.add_records(ops);
  uint64_t late = 0, latest_late_ns = 0;
  for (const GpuOp& op : ops) {
    if (op.start_ns != 0 && op.end_ns < last_delivered_ns_) {  // CUPTI gives 0 for records it could not time
      ++late;
      latest_late_ns = std::max(latest_late_ns, last_delivered_ns_ - op.end_ns);
    }
  }
  last_delivered_ns_ = std::max(last_delivered_ns_, delivered_ns);
  OpVector untimed = take_untimed(ops);
  sort_by(calls, InLogOrder{});
  sort_by(ops, InLogOrder{});
  std::lock_guard lock(mu_);
  ++stats_.rounds;
  stats_.longest_round_gap_ns = std::max(stats_.longest_round_gap_ns, gap_ns);
  stats_.late_ops += late;
  stats_.latest_late_ns = std::max(stats_.latest_late_ns, latest_late_ns);
  calls_before_ns_ = std::max(calls_before_ns_, calls_before_ns);
  // Untimed work waits for the next chunk to release it (compact_chunk, before the analysis advances to a horizon
  // that counts its record), not here: that needs the analysis' lock, and the collecting thread would wait for every
  // step in progress whenever some work came untimed (CUPTI's device buffers used up in a flood: just when it must
  // keep up).
  for (auto& [op, rounds] : untimed_) ++rounds;
  take_in(std::move(calls), std::move(ops), std::move(untimed), std::move(marks));
  stats_.peak_backlog = std::max<uint64_t>(stats_.peak_backlog, backlog_calls_.size());
  shed();
  stats_.add_ns += elapsed_ns(t0);
}

void AnalysisFeed::take_in(CallVector calls, OpVector ops, OpVector untimed, std::vector<Mark> marks) {
  for (GpuOp& op : untimed) untimed_.emplace_back(std::move(op), 0);
  take_marks(std::move(marks));
  merge_into(backlog_calls_, std::move(calls), InLogOrder{});
  merge_into(backlog_ops_, std::move(ops), InLogOrder{});
}

uint64_t AnalysisFeed::records_before(uint64_t flushed_ns, uint64_t forced_ns) {
  const uint64_t before = awaited_.before(flushed_ns, forced_ns);
  std::lock_guard lock(mu_);
  stats_.awaited_records = awaited_.awaited();
  stats_.overdue_records = awaited_.overdue();
  return before;
}

// Moves into the analysis the untimed work whose call is there, and the work that waited too long (`all`: every
// one), and returns a copy of it for the sink (none without one) to write once the backlog's lock is let go. The
// common case, no untimed work, costs nothing; otherwise one pass over the calls held, looked up among the
// few untimed operations' ids (sorting the ids of every call held, each round and chunk, cost more than the
// analysis once a flood filled the backlog).
OpVector AnalysisFeed::release_untimed(bool all) {
  if (untimed_.empty()) return {};
  // Whether each untimed op's call is in the analysis, or still in the backlog: work of a call in the backlog waits
  // for it however long (released without it, it would be no one's work there and be let go, and its call, when it
  // came, would wait for its record kRecordOverdueNs, holding every later description back).
  std::vector<std::pair<uint64_t, size_t>> wanted;  // (correlation id, index in untimed_)
  std::vector<uint8_t> in_analysis(untimed_.size(), 0), in_backlog(untimed_.size(), 0);
  if (!all) {
    wanted.reserve(untimed_.size());
    for (size_t i = 0; i < untimed_.size(); ++i) wanted.emplace_back(untimed_[i].first.correlation_id, i);
    std::sort(wanted.begin(), wanted.end());
    auto mark = [&](const CallVector& calls, std::vector<uint8_t>& found) {
      for (const ApiCall& c : calls) {
        for (uint64_t id : {c.correlation_id, c.driver_correlation_id}) {
          if (id == 0) continue;
          for (auto it = std::lower_bound(wanted.begin(), wanted.end(), std::make_pair(id, size_t{0}));
               it != wanted.end() && it->first == id; ++it) {
            found[it->second] = 1;
          }
        }
      }
    };
    mark(analysis_.window().calls, in_analysis);
    mark(backlog_calls_, in_backlog);
  }
  OpVector released;
  size_t out = 0;
  for (size_t i = 0; i < untimed_.size(); ++i) {
    auto& [op, rounds] = untimed_[i];
    const bool overdue = rounds > kUntimedRounds && !in_backlog[i];
    if (all || overdue || in_analysis[i]) {
      released.push_back(std::move(op));
    } else {
      untimed_[out++] = std::move(untimed_[i]);
    }
  }
  untimed_.resize(out);
  if (released.empty()) return {};
  OpVector for_sink;
  if (sink_) for_sink = released;
  analysis_.add({}, std::move(released));
  return for_sink;
}

// Written once the backlog's lock is let go (the collecting side does not wait for a recording's write), still
// under the analysis' (the sinks are written one call at a time, in the analysis' order).
void AnalysisFeed::write_sink(CallVector calls, OpVector ops) {
  if (!sink_) return;
  if (!calls.empty() || !ops.empty()) sink_->take(std::move(calls), std::move(ops));
}

// The backlog's records of work that started before `next_ns` (all of them at UINT64_MAX), in log order.
OpVector AnalysisFeed::take_ops_before(uint64_t next_ns) {
  const auto split = next_ns == UINT64_MAX
                         ? backlog_ops_.end()
                         : std::lower_bound(backlog_ops_.begin(), backlog_ops_.end(), next_ns,
                                            [](const GpuOp& op, uint64_t t) { return op.start_ns < t; });
  // The smaller part goes into a vector of its own (the rest is moved up, or keeps the backlog's vector and memory).
  if (split - backlog_ops_.begin() <= backlog_ops_.end() - split) {
    OpVector ops(std::make_move_iterator(backlog_ops_.begin()), std::make_move_iterator(split));
    backlog_ops_.erase(backlog_ops_.begin(), split);
    return ops;
  }
  OpVector rest(std::make_move_iterator(split), std::make_move_iterator(backlog_ops_.end()));
  backlog_ops_.erase(split, backlog_ops_.end());
  return std::exchange(backlog_ops_, std::move(rest));
}

// Calls are taken whole, in start order: everything that started before the backlog's next call is then in the
// analysis, so that call's start bounds the horizon too.
void AnalysisFeed::take_chunk(uint64_t horizon_ns, size_t most, bool to_horizon_asked) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  // Behind (more than two chunks waiting: a flood), chunks of twice the size: each step indexes the window as well as
  // its chunk (streaming.h), and a larger chunk spreads that over more calls. Not otherwise: a chunk's temporaries are
  // part of the memory a run adds.
  size_t chunk = backlog_calls_.size() > 2 * chunk_calls_ ? 2 * chunk_calls_ : chunk_calls_;
  if (most != 0) chunk = std::min(chunk, most);
  // No further than the horizon when calls before it wait and the pace asks (`to_horizon_asked`: with a flush
  // period, not behind): those after it would go into the window only to wait there, each with its per-call state,
  // for the records that hold the horizon back, and be looked at again by every step until they came. In an 8-thread
  // flood the window held a whole chunk (up to 32k calls) beside the margin's ~11k, and with records late that was a
  // large part of the memory the analysis added (docs/performance.md). They count toward the backlog's limits
  // instead (shed, force_flush, behind_at): a round or two of calls. With none before it, a whole chunk.
  const auto chunk_end = backlog_calls_.begin() + static_cast<std::ptrdiff_t>(std::min(chunk, backlog_calls_.size()));
  const auto horizon_at = std::lower_bound(backlog_calls_.begin(), chunk_end, horizon_ns,
                                           [](const ApiCall& c, uint64_t t) { return c.start_ns < t; });
  const bool to_horizon = to_horizon_asked && horizon_at != backlog_calls_.begin() && horizon_at != chunk_end;
  const size_t k = static_cast<size_t>((to_horizon ? horizon_at : chunk_end) - backlog_calls_.begin());
  const uint64_t next = k < backlog_calls_.size() ? backlog_calls_[k].start_ns : UINT64_MAX;
  // The chunk goes from the backlog's front straight into the window, and the backlog keeps its memory for the next
  // rounds: taken out as a vector of its own, the chunk was one more copy of up to 32k calls beside the window's,
  // and the backlog (the rest, when the chunk was most of it) grew again from nothing, copied at each doubling.
  const std::span<const ApiCall> front(backlog_calls_.data(), k);
  // The records of work that started before the backlog's next call. The rest waits here with the calls that may
  // have enqueued it: a step goes no further than that call (below), so no call it judges can have waited for work
  // that started later, and a call of the chunk whose own work starts later waits for its record as it does for a
  // record not delivered yet (Analyzer::awaits_record). Handed over whole, a backlog's records went into the window
  // at its first chunk and were indexed again at every step until their calls came: behind in a flood, the window
  // held ten times the work, each step took that much longer and the analysis never caught up again. (Not handled:
  // a call whose work starts more than kRecordOverdueNs after it returned, while the backlog holds more than a
  // chunk, may be described without that work, as if its record never came.)
  OpVector ops = take_ops_before(next);
  remember_launches(front);
  // The chunk is in the analysis before the backlog is let go: the collecting side never sees its calls in neither.
  // A sink gets a copy, written once the backlog's lock is let go.
  std::lock_guard alock(analysis_mu_);
  hand_over_counts();
  CallVector sink_calls;
  OpVector sink_ops;
  if (sink_) {
    sink_calls.assign(front.begin(), front.end());
    sink_ops = ops;
  }
  analysis_.add_copy(front, std::move(ops));
  backlog_calls_.erase(backlog_calls_.begin(), backlog_calls_.begin() + static_cast<std::ptrdiff_t>(k));
  const bool drained = backlog_calls_.empty();
  // Drained, its memory goes (the next round moves its own vector in); a flood keeps it from round to round.
  if (drained) {
    CallVector().swap(backlog_calls_);
    orphans_looked_at_ = 0;
  }
  OpVector released = release_untimed(false);
  lock.unlock();
  write_sink(std::move(sink_calls), std::move(sink_ops));
  write_sink({}, std::move(released));
  const uint64_t step = std::min(horizon_ns, next);
  analysis_.advance(step);
  if (sink_) sink_->advanced(step, options_.margin_ns, analysis_.window().marks);
  if (drained) analysis_.release_scratch();  // the round is done: see release_scratch()
  FeedStats& st = chunk_stats_;
  ++st.chunks;
  st.largest_chunk = std::max<uint64_t>(st.largest_chunk, k);
  const uint64_t ns = elapsed_ns(t0);
  st.compact_ns += ns;
  st.longest_chunk_ns = std::max(st.longest_chunk_ns, ns);
  st.kept_calls = analysis_.window().calls.size();
  st.kept_ops = analysis_.window().ops.size();
  st.compacted_calls = analysis_.judged_calls();
  st.peak_window_calls = std::max(st.peak_window_calls, st.kept_calls);
  st.peak_window_ops = std::max(st.peak_window_ops, st.kept_ops);
}

StreamingAnalysis::Result AnalysisFeed::finish(CallVector calls, OpVector ops, std::vector<Mark> marks) {
  {
    OpVector untimed = take_untimed(ops);  // as add(): sorted first, it would all go with the first chunk
    std::lock_guard lock(mu_);
    take_in(std::move(calls), std::move(ops), std::move(untimed), std::move(marks));
  }
  {
    std::lock_guard alock(analysis_mu_);
    if (sink_) sink_->finishing();
  }
  // Every record has come now: the backlog goes in chunks, as during the run, each step as far as the call after its
  // chunk. Handed over whole, the calls left waiting for late records went into the window at once, with their
  // per-call state and the index of one step over all of them. Half a chunk at a time, about what the run's chunks
  // that stop at the horizon take (a flood's round): each step's window holds its chunk beside the margin's calls,
  // beside the backlog still waiting, and with chunks of twice chunk_calls, as when the run falls behind, the end was
  // the peak of a flood whose records came late (docs/performance.md).
  const size_t end_chunk = std::max<size_t>(1, chunk_calls_ / 2);
  while (backlog_size() > end_chunk) take_chunk(UINT64_MAX, end_chunk, false);
  std::lock_guard lock(mu_);
  std::lock_guard alock(analysis_mu_);
  hand_over_counts();
  if (sink_) write_sink(backlog_calls_, backlog_ops_);  // copies: the analysis takes these
  analysis_.add(std::exchange(backlog_calls_, {}), std::exchange(backlog_ops_, {}));
  write_sink({}, release_untimed(true));
  StreamingAnalysis::Result r = analysis_.finish();
  chunk_stats_.kept_calls = r.log.calls.size();
  chunk_stats_.kept_ops = r.log.ops.size();
  r.log.run.unanalyzed_calls = stats_.shed_calls;
  r.log.run.complete = complete_;
  r.log.run.threshold_ns = options_.analysis.threshold_ns;
  r.log.run.cost_threshold_ns = options_.analysis.cost_threshold_ns;
  return r;
}

}  // namespace asynccheck
