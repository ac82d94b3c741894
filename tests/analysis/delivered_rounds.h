// A log delivered to the streaming feed as the capture delivers a run (analysis/feed.h): in rounds of the calls
// that returned and the work that ended before each round's time, each with the horizon the capture would give it.
// Shared by the feed's tests (test_streaming.cpp) and its two-thread stress program (feed_threads_stress.cpp).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/events.h"
#include "analysis/feed.h"
#include "analysis/feed_threads.h"
#include "analysis/pace.h"
#include "analysis/recording.h"
#include "analysis/streaming.h"

namespace asynccheck::test_rounds {

inline AnalysisOptions options_for(const EventLog& log) {
  AnalysisOptions ao;
  if (log.run.threshold_ns) ao.threshold_ns = log.run.threshold_ns;
  return ao;
}

inline StreamingOptions compact_options(const EventLog& log, uint64_t margin_ns) {
  StreamingOptions o;
  o.analysis = options_for(log);
  o.margin_ns = margin_ns;
  return o;
}

inline std::pair<uint64_t, uint64_t> span_of(const EventLog& log) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const ApiCall& c : log.calls) lo = std::min(lo, c.start_ns), hi = std::max(hi, c.end_ns);
  for (const GpuOp& o : log.ops) lo = std::min(lo, o.start_ns), hi = std::max(hi, o.end_ns);
  return {lo, hi};
}

struct Delivered {
  CallVector calls;
  OpVector ops;
  uint64_t time = 0, horizon = 0;  // horizon: the round's time, or the start of a call still open then
};

inline std::vector<Delivered> rounds_of(const EventLog& log, int rounds) {
  const auto [lo, hi] = span_of(log);
  std::vector<Delivered> out(static_cast<size_t>(rounds));
  for (int k = 0; k < rounds; ++k) {
    Delivered& d = out[static_cast<size_t>(k)];
    d.time = k + 1 == rounds ? hi + 1 : lo + (hi - lo) / static_cast<uint64_t>(rounds) * static_cast<uint64_t>(k + 1);
    d.horizon = d.time;
    const uint64_t prev = k == 0 ? 0 : out[static_cast<size_t>(k - 1)].time;
    for (const ApiCall& c : log.calls) {
      if (c.end_ns >= prev && c.end_ns < d.time) d.calls.push_back(c);
      if (c.start_ns < d.time && c.end_ns >= d.time) d.horizon = std::min(d.horizon, c.start_ns);
    }
    for (const GpuOp& o : log.ops) {
      if (o.end_ns >= prev && o.end_ns < d.time) d.ops.push_back(o);
    }
    std::reverse(d.calls.begin(), d.calls.end());  // any order: the compactor sorts
  }
  return out;
}

// Deliver untimed work as CUPTI would: the round after its call returned (as UntimedWorkDoesNotKeepItsCallForever).
inline std::vector<Delivered> rounds_with_untimed(const EventLog& log, int n) {
  std::unordered_map<uint64_t, uint64_t> call_end;
  for (const ApiCall& c : log.calls) {
    call_end[c.correlation_id] = c.end_ns;
    if (c.driver_correlation_id) call_end[c.driver_correlation_id] = c.end_ns;
  }
  std::vector<Delivered> rounds = rounds_of(log, n);
  for (Delivered& d : rounds) {
    std::erase_if(d.ops, [](const GpuOp& op) { return op.start_ns == 0 && op.kind != GpuOpKind::Sync; });
  }
  for (const GpuOp& op : log.ops) {
    if (op.start_ns != 0 || op.kind == GpuOpKind::Sync) continue;
    const auto e = call_end.find(op.correlation_id);
    const uint64_t end = e == call_end.end() ? 0 : e->second;
    auto r = std::find_if(rounds.begin(), rounds.end(), [&](const Delivered& d) { return d.time > end; });
    (r == rounds.end() ? rounds.back() : *r).ops.push_back(op);
  }
  return rounds;
}

// Every committed recording (tests/fixtures/recordings), read, with its file name; those that cannot be read are
// in `errors` ("path: what is wrong").
inline std::vector<std::pair<std::filesystem::path, EventLog>> read_committed_recordings(
    const std::filesystem::path& source_dir, std::vector<std::string>& errors) {
  std::vector<std::pair<std::filesystem::path, EventLog>> out;
  for (const auto& entry : std::filesystem::directory_iterator(source_dir / "tests/fixtures/recordings")) {
    if (entry.path().extension() != ".rec") continue;
    std::ifstream in(entry.path());
    EventLog log;
    std::string error;
    if (read_recording(in, log, error)) {
      out.emplace_back(entry.path(), std::move(log));
    } else {
      errors.push_back(entry.path().string() + ": " + error);
    }
  }
  return out;
}

// The rounds added by one thread (the collecting side) while another analyzes them (the analyzing side): the
// capture's own loops (analysis/feed_threads.h), paced as the capture paces them, without a flush period, a round
// taken as soon as the last one was; returns once every round was added and the backlog drained, both threads
// stopped (what the window holds then is finish()'s, as at the capture's end).
inline void deliver_on_two_threads(AnalysisFeed& feed, const EventLog& log, const std::vector<Delivered>& rounds,
                                   size_t round_calls, size_t max_backlog) {
  constexpr auto kPoll = std::chrono::milliseconds(1);
  FeedThreads t;
  t.running = 2;
  std::atomic<size_t> added{0};
  uint64_t horizon = 0;  // the collecting thread's
  std::thread collector([&] {
    collect_loop(
        t, kPoll, round_calls, [&] { return added.load() < rounds.size() ? round_calls : 0; },
        [&] {
          if (added.load() == rounds.size()) return horizon;  // a round is due every second, with nothing or not
          const Delivered& d = rounds[added.load()];
          feed.add(d.calls, d.ops, log.marks, d.time, d.horizon);
          horizon = std::min(d.horizon, feed.records_before(d.time, d.time));
          (void)feed.stats();  // as the `stats` option reads them, from another thread
          added.fetch_add(1);
          return horizon;
        });
  });
  std::thread analyzer(
      [&] { analyze_loop(t, feed, AnalyzerPace(0, round_calls, max_backlog, PaceClock::now()), kPoll); });
  while (added.load() < rounds.size() || feed.has_backlog()) std::this_thread::sleep_for(kPoll);
  {
    std::lock_guard lock(t.mu);
    t.stop = true;
    t.cv.notify_all();
  }
  collector.join();
  analyzer.join();
}

}  // namespace asynccheck::test_rounds
