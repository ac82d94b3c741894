// The loops of the feed's two threads (feed.h: AnalysisFeed), apart from where their events come from: the capture
// runs them on what the program's threads and CUPTI captured (interpose/analysis_thread.cpp), bench/flood_feed on
// a fabricated flood. One collects: each round it moves what waits into the feed (`take_round`) and publishes the
// horizon. The other analyzes: it moves the backlog into the analysis a chunk at a time, up to the published horizon.
// When each acts is analysis/pace.h's decision.
#pragma once

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "analysis/event_memory.h"
#include "analysis/events.h"
#include "analysis/feed.h"
#include "analysis/pace.h"

namespace asynccheck {

struct FeedThreads {
  std::atomic<uint64_t> horizon_ns{0};  // how far the analyzer may judge: the last round's horizon
  std::mutex mu;
  std::condition_variable cv;  // a stop, a thread leaving, a round taken
  bool stop = false;           // guarded by mu, as are the two below
  int running = 0;             // the threads still in their loops
  uint64_t rounds_taken = 0;   // rounds the collector added: the analyzer waits for the next
};

// Leaves a loop: whoever waits for both to stop is told.
inline void leave_feed_loop(FeedThreads& t) {
  std::lock_guard lock(t.mu);
  --t.running;
  t.cv.notify_all();
}

// A round takes each program thread's buffer of calls by swapping in `spare` under the thread's lock (the thread waits
// on it meanwhile), and copies what it took into the round outside it. One spare for every thread, not one each: in
// an 8-thread flood each thread's spare was as large as its share of a round or more, written whole, and 8 of them
// waited at once. The spare is a buffer taken before, its pages written: a buffer a thread fills afresh costs it a
// page fault every 28 calls (~35 faults per 1000 calls in bench/api_calls on the H200), on the program's thread.

// The round's vector, allocated once for what the threads hold (`pending` of each, pointers to their logs) and the
// calls they make while it is taken: grown thread by thread, it was copied as often, two sizes of it at once.
template <typename Logs>
CallVector round_for(const Logs& logs) {
  size_t expected = 0;
  for (const auto& log : logs) expected += log->pending.load(std::memory_order_relaxed);
  CallVector round;
  round.reserve(expected + expected / 8);
  return round;
}

// A thread's first buffer (interpose/capture.cpp), and the least a spare holds.
inline constexpr size_t kThreadBufferCalls = 4096;

// Before the lock: makes sure the spare is as large as what the thread holds (`expected`) up to a round, so that the
// thread does not reallocate as it appends.
inline void ready_spare(CallVector& spare, size_t expected, size_t round_calls) {
  const size_t want = std::max(kThreadBufferCalls, std::min(expected, round_calls));
  if (spare.capacity() >= want) return;
  CallVector larger;
  larger.reserve(want);
  spare.swap(larger);
}
// Under the thread's lock: its calls into `taken`, the spare in their place. A thread with none keeps its buffer (one
// that makes few calls, or none any more: one that exited), and the spare waits for the next.
inline void swap_in_spare(CallVector& calls, CallVector& spare, CallVector& taken) {
  if (calls.empty()) return;
  taken.swap(calls);
  calls.swap(spare);
}
// After it: `taken` goes into the round, and becomes the next thread's spare however little of it was used, unless it
// is larger than two rounds (a burst while the analysis was behind): then it is freed. Until 2026-11-27 a mostly
// empty one was freed too: in an 8-thread flood's 5 ms rounds (about 900 calls of 4096 each) that was every buffer,
// every round, and the next thread wrote to fresh pages.
inline void return_taken(CallVector& taken, CallVector& spare, CallVector& round, size_t round_calls) {
  if (taken.capacity() == 0) return;  // nothing was taken
  round.insert(round.end(), taken.begin(), taken.end());
  const bool keep = taken.capacity() <= 2 * round_calls;
  taken.clear();
  if (keep && spare.capacity() < taken.capacity()) spare.swap(taken);
  taken = CallVector();
}

// Looks every `poll` whether a round is due (round_due: `pending()` calls held by the program's threads); then
// `take_round()` moves them into the feed and returns the round's horizon. A round's worth that came while one was
// taken is taken at once.
template <typename Pending, typename TakeRound>
void collect_loop(FeedThreads& t, std::chrono::milliseconds poll, size_t round_calls, Pending pending,
                  TakeRound take_round) {
  auto last = std::chrono::steady_clock::now();
  bool behind = false;
  std::unique_lock lock(t.mu);
  while (!t.stop) {
    if (!behind && t.cv.wait_for(lock, poll, [&] { return t.stop; })) break;
    lock.unlock();
    const auto now = std::chrono::steady_clock::now();
    behind = false;
    if (round_due(now - last, pending(), round_calls)) {
      last = now;
      t.horizon_ns.store(take_round(), std::memory_order_release);
      behind = round_due({}, pending(), round_calls);
      lock.lock();
      ++t.rounds_taken;
      t.cv.notify_all();  // the analyzer waits for a round
      lock.unlock();
    }
    lock.lock();
  }
  lock.unlock();
  leave_feed_loop(t);
}

// Takes chunks as `pace` says, up to the published horizon; waits for the next round once drained.
inline void analyze_loop(FeedThreads& t, AnalysisFeed& feed, AnalyzerPace pace, std::chrono::milliseconds poll) {
  std::unique_lock lock(t.mu);
  while (!t.stop) {
    const uint64_t round = t.rounds_taken;  // before the backlog is looked at: a round added after it wakes us
    lock.unlock();
    const uint64_t horizon = t.horizon_ns.load(std::memory_order_acquire);
    const AnalyzerPace::Look look = pace.look(
        horizon, feed.backlog_size(), [&] { return feed.backlog_front_ns(); }, PaceClock::now());
    if (look.chunk) feed.compact_chunk(horizon, look.to_horizon);
    if (pace.trim(look.drained, PaceClock::now())) {  // drained after falling behind: what it held goes back
      malloc_trim(0);
      event_memory::release_cache();
    }
    lock.lock();
    // Drained: nothing to do until the next round.
    if (look.drained) t.cv.wait_for(lock, poll, [&] { return t.stop || t.rounds_taken != round; });
    if (t.rounds_taken != round) pace.round_seen(PaceClock::now());
  }
  lock.unlock();
  leave_feed_loop(t);
}

}  // namespace asynccheck
