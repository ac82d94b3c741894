// The streaming feed's two sides on two threads, as the capture runs them (interpose/analysis_thread.cpp): every
// committed recording added in rounds on one thread while another analyzes it, paced as the capture paces it
// (analysis/pace.h), with a sink that the events also go to (as a recording or a trace) and with a fiftieth of the
// GPU work delivered untimed (CUPTI's device buffers used up); then again with a backlog limit small enough to shed
// while chunks run. Built plain and under
// ThreadSanitizer (tests/analysis/CMakeLists.txt), which fails the run on a data race between the two sides (the
// gtest binary is not built with it: it links the report library, and races are the feed's and the analysis'). The
// saved result must be what the same rounds give on one thread, and the sink must get every event once; shedding
// must keep the findings and count the calls.
// Exit 0 when all is well, 1 with one line per problem otherwise.
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/feed.h"
#include "analysis/recording.h"
#include "rules/catalog.h"
#include "tests/analysis/delivered_rounds.h"

namespace asynccheck {
namespace {

using test_rounds::compact_options;
using test_rounds::Delivered;
using test_rounds::options_for;

constexpr uint64_t kMargin = 200'000;  // ns

// Counts what it is given, as a recording would keep it (take) or a trace read it (write).
class CountingSink : public EventSink {
 public:
  void write(const CallVector& calls, const OpVector& ops) override {
    std::lock_guard lock(mu_);
    for (const ApiCall& c : calls) ++calls_[{c.start_ns, c.correlation_id}];
    for (const GpuOp& o : ops) ++ops_[{o.start_ns, o.correlation_id}];
  }
  void take(CallVector&& calls, OpVector&& ops) override {
    const CallVector c = std::move(calls);
    const OpVector o = std::move(ops);
    write(c, o);
  }
  // What of `log` it was not given exactly once.
  std::string missing(const EventLog& log) {
    std::lock_guard lock(mu_);
    std::map<std::pair<uint64_t, uint64_t>, int> calls, ops;
    for (const ApiCall& c : log.calls) ++calls[{c.start_ns, c.correlation_id}];
    for (const GpuOp& o : log.ops) ++ops[{o.start_ns, o.correlation_id}];
    if (calls != calls_) return "calls";
    if (ops != ops_) return "GPU operations";
    return "";
  }

 private:
  std::mutex mu_;
  std::map<std::pair<uint64_t, uint64_t>, int> calls_, ops_;
};

// Every fiftieth operation untimed (start and end 0), as CUPTI delivers work once its device buffers are used up.
EventLog with_untimed(EventLog log) {
  for (size_t i = 0; i < log.ops.size(); i += 50) {
    if (log.ops[i].kind != GpuOpKind::Sync) log.ops[i].start_ns = log.ops[i].end_ns = 0;
  }
  return log;
}

// What the report of the feed's result says, a line each, sorted: the counts, every finding kept (its call, rule,
// level and times) and the sites folded away (the result's `carried_site` lines). Not the result's text itself:
// which of the window's operations are still held when the run ends, rather than counted as let go, depends on where
// the steps fell, and the report does not (the gtest two-thread tests compare whole JSON reports).
std::string saved(AnalysisFeed& feed, const EventLog& original) {
  EventLog out = feed.finish({}, {}, original.marks).log;  // every mark, as the capture's finish() gives them
  copy_run_and_tables(original, out);
  const Analysis a = analyze(out, options_for(out));
  std::vector<std::string> lines;
  lines.push_back("watched " + std::to_string(a.calls_watched) + " captured " + std::to_string(a.captured_calls) +
                  " outside " + std::to_string(a.outside_range_calls) + " disagreements " +
                  std::to_string(a.kind_disagreements) + " contexts " + std::to_string(a.context_creation_ns) +
                  " operations " + std::to_string(out.ops.size() + out.carried.ops));
  for (const auto& [rule, count] : a.not_observed) {
    lines.push_back("not_observed " + std::string(rules::rule(rule).id) + " " + std::to_string(count));
  }
  for (const Finding& f : a.findings) {
    const ApiCall& c = out.calls[f.call];
    lines.push_back("finding " + std::to_string(c.start_ns) + " " + std::to_string(c.correlation_id) + " " +
                    std::string(rules::rule(f.rule).id) + " " + std::to_string(static_cast<int>(f.level)) + " " +
                    std::to_string(f.held_ns) + " " + std::to_string(f.waited_ns) + " " + std::to_string(f.own_ns) +
                    " " + std::to_string(f.gpu_delay_ns) + " " + std::to_string(f.below_threshold) + " " +
                    std::to_string(static_cast<int>(f.evidence.by)) + " " + std::to_string(f.evidence.gap_ns) + " " +
                    std::to_string(static_cast<int>(f.evidence.scope)) + " " + f.note);
  }
  std::ostringstream text;
  write_recording(text, out);
  std::istringstream in(text.str());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("carried_site ", 0) == 0 || line.rfind("carried_not_observed ", 0) == 0) lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  std::string joined;
  for (const std::string& l : lines) joined += l + "\n";
  return joined;
}

// The first line where two saved results differ ("two threads: LINE / one thread: LINE"), or "" if they do not.
std::string first_difference(const std::string& two, const std::string& one) {
  std::istringstream a(two), b(one);
  std::string x, y;
  for (size_t n = 1;; ++n) {
    const bool more_a = static_cast<bool>(std::getline(a, x)), more_b = static_cast<bool>(std::getline(b, y));
    if (!more_a && !more_b) return "";
    if (!more_a || !more_b || x != y) {
      return "line " + std::to_string(n) + ", two threads: '" + (more_a ? x : "(end)") + "', one thread: '" +
             (more_b ? y : "(end)") + "'";
    }
  }
}

std::string one_thread(const EventLog& log, const std::vector<Delivered>& rounds, size_t chunk) {
  AnalysisFeed feed(compact_options(log, kMargin), log.run.env, chunk);
  for (const Delivered& d : rounds) {
    feed.add(d.calls, d.ops, log.marks, d.time, d.horizon);
    const uint64_t horizon = std::min(d.horizon, feed.records_before(d.time, d.time));
    while (feed.has_backlog()) feed.compact_chunk(horizon);
  }
  return saved(feed, log);
}

int run() {
  std::vector<std::string> errors;
  const auto recordings = test_rounds::read_committed_recordings(ASYNCCHECK_SOURCE_DIR, errors);
  size_t analyzed = 0, shedding = 0;
  for (const auto& [path, log] : recordings) {
    if (compacted(log)) continue;  // only its own threshold: nothing to deliver again
    ++analyzed;
    const std::vector<Delivered> rounds = test_rounds::rounds_of(log, 13);
    // Many chunks a round, so that chunks run while rounds are added; not thousands (under ThreadSanitizer each step
    // over the window costs a hundred times more).
    const size_t chunk = std::max<size_t>(3, log.calls.size() / 400);
    AnalysisFeed feed(compact_options(log, kMargin), log.run.env, chunk);
    CountingSink sink;
    feed.set_sink(&sink);
    test_rounds::deliver_on_two_threads(feed, log, rounds, chunk, 0);
    if (const std::string d = first_difference(saved(feed, log), one_thread(log, rounds, chunk)); !d.empty()) {
      errors.push_back(path.string() + ": on two threads, not what one thread saves: " + d);
    }
    if (const std::string m = sink.missing(log); !m.empty()) {
      errors.push_back(path.string() + ": the sink was not given each of the log's " + m + " once");
    }
    const EventLog untimed = with_untimed(log);
    AnalysisFeed late(compact_options(untimed, kMargin), untimed.run.env, chunk);
    CountingSink late_sink;
    late.set_sink(&late_sink);
    const std::vector<Delivered> late_rounds = test_rounds::rounds_with_untimed(untimed, 13);
    test_rounds::deliver_on_two_threads(late, untimed, late_rounds, chunk, 0);
    if (const std::string d = first_difference(saved(late, untimed), one_thread(untimed, late_rounds, chunk));
        !d.empty()) {
      errors.push_back(path.string() + ": with untimed work on two threads, not what one thread saves: " + d);
    }
    if (const std::string m = late_sink.missing(untimed); !m.empty()) {
      errors.push_back(path.string() + ": with untimed work, the sink was not given each of the log's " + m + " once");
    }
    // Shedding while chunks run: a limit of a few rounds' calls (at least two chunks).
    const size_t limit = std::max<size_t>(2 * chunk, log.calls.size() / 40);
    AnalysisFeed small(compact_options(log, kMargin), log.run.env, chunk, limit);
    test_rounds::deliver_on_two_threads(small, log, rounds, chunk, limit);
    const FeedStats st = small.stats();
    EventLog out = small.finish({}, {}, log.marks).log;
    const uint64_t unanalyzed = out.run.unanalyzed_calls;
    copy_run_and_tables(log, out);  // the tables the calls refer to; the run as the feed ended it:
    out.run.unanalyzed_calls = unanalyzed;
    shedding += st.shed_calls != 0;
    const Analysis whole = analyze(log, options_for(log)), kept = analyze(out, options_for(out));
    if (unanalyzed != st.shed_calls) {
      errors.push_back(path.string() + ": " + std::to_string(st.shed_calls) + " calls shed, the log says " +
                       std::to_string(unanalyzed));
    }
    if (st.lost_calls == 0 && kept.calls_watched != whole.calls_watched) {
      errors.push_back(path.string() + ": shedding, " + std::to_string(kept.calls_watched) + " calls watched of " +
                       std::to_string(whole.calls_watched));
    }
  }
  if (analyzed < 5) errors.push_back("only " + std::to_string(analyzed) + " recordings to analyze");
  if (shedding == 0) errors.push_back("no recording shed a call: the limit did not bite");
  for (const std::string& e : errors) std::fprintf(stderr, "feed_threads_stress: %s\n", e.c_str());
  std::printf("feed_threads_stress: %zu recordings on two threads, %zu of them shedding: %s\n", analyzed, shedding,
              errors.empty() ? "ok" : "FAILED");
  return errors.empty() ? 0 : 1;
}

}  // namespace
}  // namespace asynccheck

int main() { return asynccheck::run(); }
