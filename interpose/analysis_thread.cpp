// The analysis threads: one collects (each round it takes what the program's threads captured and the GPU work CUPTI
// delivered, and adds it to the feed's backlog: analysis/feed.h), the other analyzes (it moves the backlog into the
// streaming analysis a chunk at a time and advances it). Apart, a flood's rounds are taken, sorted and added while
// the last ones are judged: on one thread, each waited for the other, and 8 threads launching flat out outran both.
// The collector decides when a round starts and when CUPTI is flushed by force. The loops are
// analysis/feed_threads.h's; what is here is where a round's events come from.
#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/feed_threads.h"
#include "analysis/pace.h"
#include "common/signals_blocked.h"
#include "cupti/activity.h"
#include "cupti/subscriber.h"
#include "interpose/capture.h"
#include "interpose/capture_state.h"
#include "interpose/lock_within.h"

namespace asynccheck::capture {
namespace {

// How far a round may analyze: the older of the two.
struct Horizons {
  uint64_t calls;    // now, or the start of the oldest call still in flight on any thread (it is in no buffer yet,
                     // and the calls and GPU work around its start may matter to it)
  uint64_t records;  // every record of work finished before it has been taken: the oldest call still waiting for
                     // its work's record, at least the last forced flush (AnalysisFeed::records_before)
};

// The calls the program's threads hold for the next round.
size_t pending_calls(Global& g) {
  size_t n = 0;
  std::lock_guard lock(g.mu);
  for (ThreadLog* t : g.threads) n += t->pending.load(std::memory_order_relaxed);
  return n;
}

// Moves what every thread captured, and the GPU work decoded so far, into the backlog.
Horizons take_from_threads(Global& g) {
  const uint64_t now = cupti::timestamp();
  const size_t backlog = g.flush_period_ns != 0 ? g.feed->backlog_size() : 0;
  const uint64_t front = g.max_backlog != 0 && backlog >= g.max_backlog / 2 ? g.feed->backlog_front_ns() : 0;
  const bool forced = force_flush(now, g.records_ns, g.flush_period_ns, backlog, g.max_backlog, front);
  const uint64_t buffers = cupti::buffers_completed();
  const bool ordinary = !forced && ordinary_flush(now, buffers != g.buffers_seen, pending_calls(g) != 0, g.records_ns,
                                                  g.last_round_ns, g.last_ordinary_ns);
  const auto t0 = std::chrono::steady_clock::now();
  // What CUPTI had handed over when the round took its records: a buffer that comes later is the next round's news.
  g.buffers_seen = forced || ordinary ? cupti::flush_activity(forced) : cupti::wait_decoded();
  if (forced) {
    g.last_forced_ns = now;
    g.forced_flushes.fetch_add(1, std::memory_order_relaxed);
  }
  if (ordinary) {
    g.last_ordinary_ns = now;
    g.ordinary_flushes.fetch_add(1, std::memory_order_relaxed);
  }
  g.last_round_ns = now;
  OpVector ops = cupti::take_ops();
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<ThreadLog*> threads;
  std::vector<Mark> marks;  // all of them, every round: module loads and context creations explain host time
  {
    std::lock_guard lock(g.mu);
    threads = g.threads;
    marks = g.marks;
  }
  uint64_t horizon = now;
  CallVector calls = round_for(threads);
  uint64_t shed = 0, lost = 0;
  for (ThreadLog* t : threads) {
    // The thread waits on its lock while we hold it: only swap buffers here (feed_threads.h); the copy happens
    // outside. A thread stopped while holding its lock (a signal) is skipped, and stays open.
    CallVector taken;
    ready_spare(g.spare, t->pending.load(std::memory_order_relaxed), g.round_calls);
    if (!lock_within(t->mu, std::chrono::milliseconds(50))) {
      horizon = 0;
      continue;
    }
    {
      std::lock_guard lock(t->mu, std::adopt_lock);
      swap_in_spare(t->calls, g.spare, taken);
      shed += std::exchange(t->shed, 0);
      lost += std::exchange(t->lost, 0);
      t->pending.store(0, std::memory_order_relaxed);
      // Read under the lock: a call open now is not in `taken` and bounds the horizon; a call that starts after
      // this read starts after `now`.
      const uint64_t since = t->open_since.load(std::memory_order_acquire);
      if (since != 0 && since < horizon) horizon = since;
    }
    // A copy, not a move, even for one thread: the buffer goes back (a round's copy is a few MB on our thread).
    return_taken(taken, g.spare, calls, g.round_calls);
  }
  const auto t2 = std::chrono::steady_clock::now();
  g.feed->count_round_times(static_cast<uint64_t>(std::chrono::nanoseconds(t1 - t0).count()),
                            static_cast<uint64_t>(std::chrono::nanoseconds(t2 - t1).count()));
  g.feed->add(std::move(calls), std::move(ops), std::move(marks), g.last_forced_ns, horizon);
  g.feed->count_shed(shed, lost);
  g.records_ns = g.feed->records_before(now, g.last_forced_ns);
  return {horizon, g.records_ns};
}

void collect() {
  Global& g = global();
  collect_loop(
      g.loops, kPoll, g.round_calls, [&] { return pending_calls(g); },
      [&] {
        const Horizons h = take_from_threads(g);
        return std::min(h.calls, h.records);
      });
}

void analyze() {
  Global& g = global();
  analyze_loop(g.loops, *g.feed, AnalyzerPace(g.flush_period_ns, g.round_calls, g.max_backlog, PaceClock::now()),
               kPoll);
}

}  // namespace

void start_analysis_thread() {
  {
    std::lock_guard lock(global().loops.mu);
    global().loops.running = 2;
  }
  // Detached: finish() waits for them with a deadline, never joins.
  with_signals_blocked([] {
    std::thread(collect).detach();
    std::thread(analyze).detach();
  });
}

bool stop_analysis_thread(std::chrono::milliseconds deadline) {
  Global& g = global();
  if (!g.streaming) return true;
  FeedThreads& t = g.loops;
  std::unique_lock lock(t.mu);
  t.stop = true;
  t.cv.notify_all();
  return t.cv.wait_for(lock, deadline, [&] { return t.running == 0; });
}

Stats stats() {
  Global& g = global();
  {
    // A thread that did not stop (finish() gave up on it) may hold the feed's locks for good.
    std::lock_guard lock(g.loops.mu);
    if (g.loops.running != 0) return {};
  }
  if (!lock_within(g.central_mu)) return {};
  std::lock_guard lock(g.central_mu, std::adopt_lock);
  return g.feed ? g.feed->stats() : Stats{};
}

uint64_t stacks_walked() { return global().stacks_walked.load(std::memory_order_relaxed); }

uint64_t forced_flushes() { return global().forced_flushes.load(std::memory_order_relaxed); }

uint64_t ordinary_flushes() { return global().ordinary_flushes.load(std::memory_order_relaxed); }

}  // namespace asynccheck::capture
