// When the capture's analysis threads act (analysis/pace.h): rounds, forced flushes, and the analyzing thread's
// chunks, waits and heap trims, decided from what each thread sees, on a clock the test moves.
#include <gtest/gtest.h>

#include "analysis/pace.h"

namespace asynccheck {
namespace {

using std::chrono::milliseconds;

TEST(CollectorPace, ARoundByCountOrAfterTheInterval) {
  EXPECT_FALSE(round_due(milliseconds(10), 4095, 4096));
  EXPECT_TRUE(round_due(milliseconds(10), 4096, 4096));  // the threads hold a round's calls
  EXPECT_TRUE(round_due({}, 5000, 4096));                // got a round ahead while one was taken: at once
  EXPECT_FALSE(round_due(kRoundInterval - milliseconds(1), 1, 4096));
  EXPECT_TRUE(round_due(kRoundInterval, 0, 4096));  // a program making few calls: every interval
}

// An ordinary flush only where CUPTI's own deliveries leave records waiting: not while buffers come by themselves (a
// flood) unless a record has waited kRecordsLagNs, not when nothing is to be judged, and at most every
// kOrdinaryFlushGapNs.
TEST(CollectorPace, AnOrdinaryFlushOnlyWhereCuptisOwnDeliveriesLeaveRecordsWaiting) {
  const uint64_t gap = kOrdinaryFlushGapNs;
  const uint64_t t = 100 * kRecordsLagNs;  // now
  const uint64_t round = t - 5'000'000;    // the last round, 5 ms ago
  // No buffer came: flush if the threads hold calls, or a record was awaited at the last round.
  EXPECT_TRUE(ordinary_flush(t, false, true, round, round, 0));
  EXPECT_TRUE(ordinary_flush(t, false, false, round - 1, round, 0));
  EXPECT_FALSE(ordinary_flush(t, false, false, round, round, 0));  // nothing to judge: none
  EXPECT_TRUE(ordinary_flush(t, false, false, 0, 0, 0));           // the first round: nothing known, flush
  // Buffers came (a flood): none, unless a record had waited kRecordsLagNs at the last round.
  EXPECT_FALSE(ordinary_flush(t, true, true, round - 1, round, 0));
  EXPECT_FALSE(ordinary_flush(t, true, true, round - kRecordsLagNs + 1, round, 0));
  EXPECT_TRUE(ordinary_flush(t, true, true, round - kRecordsLagNs, round, 0));
  // A program that made no call since a round a second ago, when nothing waited: none (the lag is not the time
  // since that round).
  EXPECT_FALSE(ordinary_flush(t, false, false, t - 1'000'000'000, t - 1'000'000'000, 0));
  // The last one less than the gap ago: not yet, whatever waits.
  EXPECT_FALSE(ordinary_flush(t, false, true, 0, 0, t - gap + 1));
  EXPECT_FALSE(ordinary_flush(t, true, true, round - 2 * kRecordsLagNs, round, t - gap + 1));
  EXPECT_TRUE(ordinary_flush(t, false, true, round, round, t - gap));
}

TEST(CollectorPace, ForcedFlushesEveryRoundOrWhenTheRecordsLagAPeriod) {
  EXPECT_TRUE(force_flush(5'000, 4'000, 0, 0, 0, 0));            // a period of 0: every round
  EXPECT_FALSE(force_flush(5'000, 0, 1'000'000, 0, 0, 0));       // the first round: an ordinary flush (work in flight)
  EXPECT_FALSE(force_flush(5'000, 4'000, 1'000'000, 10, 0, 0));  // the records lag less than the period
  EXPECT_FALSE(force_flush(1'003'999, 4'000, 1'000'000, 10, 0, 0));
  EXPECT_TRUE(force_flush(1'004'000, 4'000, 1'000'000, 10, 0, 0));       // a period behind
  EXPECT_FALSE(force_flush(5'000, 4'000, 1'000'000, 499, 1000, 4'500));  // the backlog below half its limit
  // At half, with its oldest call waiting for the records: flush before it sheds.
  EXPECT_TRUE(force_flush(5'000, 4'000, 1'000'000, 500, 1000, 4'000));
  EXPECT_TRUE(force_flush(5'000, 4'000, 1'000'000, 500, 1000, 4'500));
  // At half with the records ahead of its oldest call: the analysis is behind, not the records; no flush.
  EXPECT_FALSE(force_flush(5'000, 4'000, 1'000'000, 500, 1000, 3'999));
  EXPECT_EQ(behind_at(0, 16'384, 262'144), 32'768u);               // two rounds
  EXPECT_EQ(behind_at(5'000'000'000, 16'384, 262'144), 131'072u);  // what forces a flush
  EXPECT_EQ(behind_at(5'000'000'000, 16'384, 0), 32'768u);         // no backlog limit: two rounds still
}

constexpr uint64_t kPeriod = 5'000'000'000;
constexpr size_t kRound = 4096;
constexpr size_t kMaxBacklog = 262'144;  // with the period: behind past 131,072

struct AnalyzerPaceTest : ::testing::Test {
  PaceClock::time_point t0 = PaceClock::now();
  PaceClock::time_point at(int ms) const { return t0 + milliseconds(ms); }
  static auto front(uint64_t ns) {
    return [ns] { return ns; };
  }
  static auto unread() {
    return []() -> uint64_t {
      ADD_FAILURE() << "the backlog's front was read";
      return 0;
    };
  }
};

TEST_F(AnalyzerPaceTest, WithoutAPeriodEveryCallWaitingIsAChunk) {
  AnalyzerPace p(0, kRound, kMaxBacklog, t0);
  const AnalyzerPace::Look a = p.look(1000, 1, unread(), at(1));
  EXPECT_TRUE(a.chunk);
  EXPECT_FALSE(a.drained);
  EXPECT_FALSE(a.to_horizon);  // the next look would take the rest at once: one step, not two
  p.round_seen(at(1));
  const AnalyzerPace::Look b = p.look(1000, 0, unread(), at(2));
  EXPECT_FALSE(b.chunk);
  EXPECT_TRUE(b.drained);  // nothing waits: until the next round
}

// With flush_period the calls after the records horizon wait in the backlog for their records, not in the
// analysis' window where every chunk would judge them again.
TEST_F(AnalyzerPaceTest, WithAPeriodCallsAfterTheHorizonWaitInTheBacklog) {
  AnalyzerPace p(kPeriod, kRound, kMaxBacklog, t0);
  const AnalyzerPace::Look before = p.look(1000, 500, front(999), at(1));
  EXPECT_TRUE(before.chunk);       // its first call started before the horizon
  EXPECT_TRUE(before.to_horizon);  // and the chunk stops there: the rest waits for the next round
  const AnalyzerPace::Look after = p.look(1000, 500, front(1000), at(2));
  EXPECT_FALSE(after.chunk);
  EXPECT_TRUE(after.drained);
}

// A horizon held back (a call in flight for long, a thread that could not be locked) must not make the backlog
// shed: past behind_at the chunks go on past it.
TEST_F(AnalyzerPaceTest, WithAPeriodPastBehindTheChunksGoOnPastTheHorizon) {
  AnalyzerPace p(kPeriod, kRound, kMaxBacklog, t0);
  const size_t behind = behind_at(kPeriod, kRound, kMaxBacklog);
  EXPECT_FALSE(p.look(1000, behind, front(5000), at(1)).chunk);
  const AnalyzerPace::Look l = p.look(1000, behind + 1, unread(), at(2));
  EXPECT_TRUE(l.chunk);
  EXPECT_FALSE(l.drained);
  EXPECT_FALSE(l.to_horizon);
}

// The last chunk may have gone in with the round before's horizon: once no round came for kQuiet, the analysis
// advances to the newer one, once; in a flood (rounds keep coming) never for nothing.
TEST_F(AnalyzerPaceTest, ANewerHorizonWithNothingWaitingOnlyOnceQuiet) {
  AnalyzerPace p(0, kRound, kMaxBacklog, t0);
  EXPECT_TRUE(p.look(1000, 10, unread(), at(0)).chunk);  // a chunk up to 1000
  p.round_seen(at(5));
  const int quiet = static_cast<int>(AnalyzerPace::kQuiet.count());
  EXPECT_FALSE(p.look(2000, 0, unread(), at(5 + quiet - 1)).chunk);  // a round came lately
  const AnalyzerPace::Look l = p.look(2000, 0, unread(), at(5 + quiet));
  EXPECT_TRUE(l.chunk);  // quiet: to 2000
  EXPECT_TRUE(l.drained);
  EXPECT_FALSE(p.look(2000, 0, unread(), at(5 + 2 * quiet)).chunk);  // already there
  EXPECT_TRUE(p.look(3000, 0, unread(), at(5 + 2 * quiet)).chunk);   // and a newer one
}

TEST_F(AnalyzerPaceTest, TheHeapIsTrimmedOnceDrainedAfterFallingBehindAtMostOnceASecond) {
  AnalyzerPace p(0, kRound, kMaxBacklog, t0);
  const size_t behind = behind_at(0, kRound, kMaxBacklog);
  const int second = static_cast<int>(std::chrono::duration_cast<milliseconds>(AnalyzerPace::kTrimEvery).count());
  // At behind_at, not past it, then drained: never behind, so never trimmed, however long it runs.
  EXPECT_FALSE(p.trim(p.look(1, behind, unread(), at(second)).drained, at(second)));
  EXPECT_FALSE(p.trim(p.look(1, 0, unread(), at(2 * second)).drained, at(2 * second)));
  // Behind, then drained: trimmed once, not during the flood.
  EXPECT_FALSE(p.trim(p.look(1, behind + 1, unread(), at(3 * second)).drained, at(3 * second)));
  EXPECT_TRUE(p.trim(p.look(1, 0, unread(), at(3 * second)).drained, at(3 * second)));
  EXPECT_FALSE(p.trim(p.look(1, 0, unread(), at(4 * second)).drained, at(4 * second)));
  // Behind again within the second: trimmed only once it has passed.
  EXPECT_FALSE(p.trim(p.look(1, behind + 1, unread(), at(3 * second + 10)).drained, at(3 * second + 10)));
  EXPECT_FALSE(p.trim(p.look(1, 0, unread(), at(3 * second + 20)).drained, at(3 * second + 20)));
  EXPECT_TRUE(p.trim(p.look(1, 0, unread(), at(4 * second + 20)).drained, at(4 * second + 20)));
}

}  // namespace
}  // namespace asynccheck
