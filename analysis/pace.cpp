#include "analysis/pace.h"

#include <algorithm>

namespace asynccheck {

bool round_due(PaceClock::duration since_last_round, size_t pending_calls, size_t round_calls) {
  return since_last_round >= kRoundInterval || pending_calls >= round_calls;
}

bool force_flush(uint64_t now_ns, uint64_t records_ns, uint64_t period_ns, size_t backlog, size_t max_backlog,
                 uint64_t front_ns) {
  if (period_ns == 0 || (records_ns != 0 && now_ns >= records_ns + period_ns)) return true;
  return max_backlog != 0 && backlog >= max_backlog / 2 && front_ns >= records_ns;
}

bool ordinary_flush(uint64_t now_ns, bool buffers_came, bool calls_waiting, uint64_t records_ns, uint64_t last_round_ns,
                    uint64_t last_flush_ns) {
  if (last_flush_ns != 0 && now_ns < last_flush_ns + kOrdinaryFlushGapNs) return false;
  if (records_ns != 0 && last_round_ns >= records_ns + kRecordsLagNs) return true;
  if (buffers_came) return false;
  return calls_waiting || records_ns == 0 || records_ns < last_round_ns;
}

size_t behind_at(uint64_t period_ns, size_t round_calls, size_t max_backlog) {
  return period_ns == 0 ? 2 * round_calls : std::max(2 * round_calls, max_backlog / 2);
}

AnalyzerPace::AnalyzerPace(uint64_t flush_period_ns, size_t round_calls, size_t max_backlog, PaceClock::time_point now)
    : flush_period_ns_(flush_period_ns),
      behind_at_(behind_at(flush_period_ns, round_calls, max_backlog)),
      last_round_(now),
      last_trim_(now) {}

AnalyzerPace::Look AnalyzerPace::decide(uint64_t horizon_ns, size_t backlog, bool drained, PaceClock::time_point now) {
  // The last chunk may have gone in with the round before's horizon (the round was added before its horizon was
  // published): once no round came for kQuiet, the analysis still advances to this one, as one thread did each
  // round. Not at once: in a flood that was a step over the whole window for nothing after every round.
  const bool quiet = now - last_round_ >= kQuiet;
  Look l;
  l.drained = drained;
  l.chunk = !drained || (backlog == 0 && quiet && horizon_ns > advanced_to_);
  if (l.chunk) advanced_to_ = horizon_ns;
  return l;
}

// After a flood, the chunks' temporaries leave holes in the heap that glibc keeps: give them back once the backlog
// is drained, at most once a second. Not during the flood: the memory is needed again at once, and malloc_trim locks
// every arena in turn, the collecting thread's and the program's own included (a Python thread that allocates waits
// for it to walk a heap of gigabytes). Not in a program the analysis keeps up with (its heap stays the same size:
// RSS at 10M calls measured the same with and without trimming).
bool AnalyzerPace::trim(bool drained, PaceClock::time_point now) {
  if (!fell_behind_ || !drained || now - last_trim_ < kTrimEvery) return false;
  last_trim_ = now;
  fell_behind_ = false;
  return true;
}

}  // namespace asynccheck
