// When the capture's two analysis threads act (interpose/analysis_thread.cpp): what they decide from what they see,
// apart from the threads, the locks and CUPTI, so that it is tested without either (tests/analysis/test_pace.cpp)
// and the feed's two-thread tests pace the analysis as the capture does.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace asynccheck {

using PaceClock = std::chrono::steady_clock;

// The capture's pace (interpose/analysis_thread.cpp; bench/flood_feed runs at the same). A round is due when the
// program's threads hold compact_round calls (4k by default) or kRoundInterval after the last one, whichever comes
// first (the interval only matters to programs that make few calls); the collecting thread looks every kPoll, and so
// a flood's round is what its threads made in kPoll. Each chunk moves at most
// kChunkCalls calls into the analysis. These bound what waits in buffers (the threads' buffers, the round, the
// backlog: ~150 bytes a call) and a chunk's temporaries (a few hundred bytes per call of the chunk and of what the
// margin keeps), hence the memory added, and a chunk's duration (tens of ms), hence how long finish() waits.
// Halving kChunkCalls from 32k took the peak RSS at 10M calls from 208 to 160-164 MiB on the H200; rounds of 4k
// instead of 16k took 16 MiB more off one thread's 1M calls. Every 5 ms rather than 10: a flood's rounds, and what
// its threads' buffers hold, are smaller, and with flushes only where records wait (below) rounds every 10 ms held
// more at an 8-thread flood's peak with no saving per call beyond the noise (docs/performance.md). A program that
// makes fewer calls than compact_round in kPoll has its rounds by count, taken up to kPoll sooner.
// A round flushes CUPTI only when ordinary_flush or force_flush says so (below); a forced flush costs the program's
// threads: with one every round, as before flush_period, a launch-bound PyTorch loop (~35k calls a second) cost +38%
// against the floor's +23% with rounds every 100 ms, +33% every second (5 interleaved rounds each, H200; noisy).
inline constexpr auto kPoll = std::chrono::milliseconds(5);
inline constexpr size_t kChunkCalls = 16 * 1024;
// Shorter than streaming.h's default (50 ms): at a launch-bound loop's ~0.4M calls a second, what the margin keeps
// is analyzed again in every chunk. It covers the skew between GPU and CPU timestamps. Records of work no watched
// call enqueued may come later than that (ordinary flushes delivered records up to 278 ms late), and the records
// horizon cannot wait for them (AnalysisFeed::records_before says what that costs); the `stats` option counts records
// that came a round late and how long before the flush that missed them they ended.
inline constexpr uint64_t kMarginNs = 10'000'000;

inline constexpr auto kRoundInterval = std::chrono::seconds(1);
bool round_due(PaceClock::duration since_last_round, size_t pending_calls, size_t round_calls);

// Whether a round flushes CUPTI by force (the flush_period option). A forced flush delivers the records
// of all work finished so far; an ordinary one only the buffers whose records are all complete, in any order, so
// the records horizon follows the calls still waiting for theirs (AnalysisFeed::records_before). Forced flushes make
// CUPTI's device-buffer pool grow while several threads launch, and past its limit work comes untimed
// (cupti/activity.cpp). A forced flush also hands back the records of work still queued or running with no end
// time, and CUPTI never delivers them again: forced at a program's first round (as until 2026-11-25), 1,013 of the
// 6,000 kernels of `traps stream_sync_after_launches 6000` came untimed. So: every round when `period_ns` is 0; when
// the records horizon of the last round (`records_ns`, 0 before the first round: not a lag) lagged `period_ns` (5 s
// by default) behind `now_ns` (a graph launch's
// nodes, work queued that long, a record that never comes); and when the backlog held half of `max_backlog` as the
// round began while its oldest call (`front_ns`) waited for the records horizon. A backlog that large with the
// records ahead of it is an analysis behind a flood: a forced flush would not let it go faster, and it costs the
// collecting thread a round's time (flood runs that shed had 10 forced flushes where the others had 1).
bool force_flush(uint64_t now_ns, uint64_t records_ns, uint64_t period_ns, size_t backlog, size_t max_backlog,
                 uint64_t front_ns);

// Whether a round that forces no flush flushes CUPTI at all (an ordinary flush, flag 0). cuptiActivityFlushAll from
// our thread while the program's threads launch crashes CUPTI 13.0 now and then on a loaded host: a SIGSEGV inside
// libcupti below cuLaunchKernel (docs/robustness.md; the CUPTI floor flushing every 5 ms did it too, and never
// without the flush). CUPTI hands over the buffers it fills on its own, from its worker thread: a flood's come every
// few milliseconds and need no flush. So at most one ordinary flush every kOrdinaryFlushGapNs (`last_flush_ns`, 0:
// none yet), and only
// - when a call had waited for its work's record kRecordsLagNs or more at the last round (`records_ns`, that round's
//   records horizon, 0 before the first round; `last_round_ns`, that round's time: the horizon is the round's time
//   when nothing waited), whatever else came: CUPTI fills a buffer per thread, and one thread's full buffers say
//   nothing of another's part-filled one;
// - or when CUPTI handed over nothing since the last round (`buffers_came` false) while the threads hold calls for
//   this round (`calls_waiting`) or a call still waited for its record at the last round (`records_ns` before
//   `last_round_ns`, that round's time): a program that fills buffers slowly, whose records (of the calls, and of
//   work no watched call enqueued, such as unified memory's migrations) would otherwise wait for the next one.
inline constexpr uint64_t kOrdinaryFlushGapNs = 100'000'000;
inline constexpr uint64_t kRecordsLagNs = 100'000'000;
bool ordinary_flush(uint64_t now_ns, bool buffers_came, bool calls_waiting, uint64_t records_ns, uint64_t last_round_ns,
                    uint64_t last_flush_ns);

// The backlog size past which the analysis counts as behind (the capture takes from the threads at once, trims
// the heap) and, with a flush period, goes on analyzing past the records horizon rather than shed: two rounds of
// calls, or with a period the half of `max_backlog` that forces a flush (what waits for it is not "behind").
size_t behind_at(uint64_t period_ns, size_t round_calls, size_t max_backlog);

// The analyzing thread's pace: after each look at the feed, whether it takes a chunk (AnalysisFeed::compact_chunk
// up to the published horizon), waits for the next round, or gives the heap back.
class AnalyzerPace {
 public:
  // No round for this long: the program is not flooding us (a round comes every round_calls calls, and at least
  // every kRoundInterval).
  static constexpr auto kQuiet = std::chrono::milliseconds(100);
  // malloc_trim at most this often.
  static constexpr auto kTrimEvery = std::chrono::seconds(1);

  AnalyzerPace(uint64_t flush_period_ns, size_t round_calls, size_t max_backlog, PaceClock::time_point now);

  struct Look {
    bool chunk = false;    // take a chunk, up to the horizon
    bool drained = false;  // nothing to analyze until the next round: wait for one
    // The chunk stops at the horizon (AnalysisFeed::compact_chunk): what started after it waits in the backlog for
    // the next round. Only where the next look would wait (drained, below): without a period, or past behind_at, the
    // next look takes the rest at once, and a chunk cut there would be one more step to the same horizon.
    bool to_horizon = false;
  };
  // What to do, seeing the published horizon, the backlog's size and the start of its first call (read only when
  // asked: `front_ns()`, a lock of the feed's). A chunk it asks for is taken before the next look.
  template <typename FrontNs>
  Look look(uint64_t horizon_ns, size_t backlog, FrontNs front_ns, PaceClock::time_point now) {
    if (backlog > behind_at_) fell_behind_ = true;
    // With flush_period, what started after the horizon waits in the backlog, rather than in the analysis' window
    // where every chunk would judge it again until the records it waits for come; drained as far as it can be.
    // Not past behind_at: a horizon held back by a call in flight (or a thread we could not lock) must not make
    // the backlog shed, so the chunks go on into the analysis, as without a period.
    const bool waits = flush_period_ns_ != 0 && backlog <= behind_at_;
    const bool drained = backlog == 0 || (waits && front_ns() >= horizon_ns);
    Look l = decide(horizon_ns, backlog, drained, now);
    l.to_horizon = waits;
    return l;
  }
  // Whether to give the heap back now (after the look's chunk, if any).
  bool trim(bool drained, PaceClock::time_point now);
  // A round was added since the last look.
  void round_seen(PaceClock::time_point now) { last_round_ = now; }

 private:
  Look decide(uint64_t horizon_ns, size_t backlog, bool drained, PaceClock::time_point now);

  uint64_t flush_period_ns_;
  size_t behind_at_;
  uint64_t advanced_to_ = 0;          // the horizon of the last chunk
  PaceClock::time_point last_round_;  // when a round was last seen added
  PaceClock::time_point last_trim_;
  bool fell_behind_ = false;  // the backlog grew past behind_at since the last trim
};

}  // namespace asynccheck
