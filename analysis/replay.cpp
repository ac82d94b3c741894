#include "analysis/replay.h"

#include <algorithm>
#include <utility>

#include "analysis/capture_range.h"
#include "analysis/feed.h"
#include "analysis/recording.h"

namespace asynccheck {

Replay::Replay(OptionsFor options, EventSink* sink, ReleaseSink* release)
    : options_for_(std::move(options)), sink_(sink), release_(release) {}

Replay::~Replay() = default;

bool Replay::step(EventLog& log, uint64_t horizon_ns, uint64_t margin_ns, std::string& error) {
  if (horizon_ns == UINT64_MAX) {
    error = "step to horizon_ns " + std::to_string(horizon_ns) +
            ", which judges everything (a run's analysis does that only at its end, without a step line)";
    return false;
  }
  if (!analysis_) {
    if (!options_for_(log, options_, error)) return false;
    options_.margin_ns = margin_ns;
    // NVTX names come as the recording goes (each before the first call in it): the capture range's test looks them
    // up when a call is judged, in the table as read by then, not in a copy of it made now.
    capture_range_ = log.run.capture_range;
    const CaptureRange range = parse_capture_range(capture_range_).value_or(CaptureRange{});
    options_.analysis.in_nvtx_range = nvtx_range_test(range, [&log](uint32_t id) {
      return id > 0 && id <= log.nvtx_ranges.size() ? log.nvtx_ranges[id - 1] : NvtxRange{};
    });
    analysis_ = std::make_unique<StreamingAnalysis>(options_, log.run.env);
    analysis_->set_release_sink(release_);
    replayed_ = true;
  } else if (margin_ns != options_.margin_ns) {
    error = "step with margin_ns " + std::to_string(margin_ns) + " after steps with " +
            std::to_string(options_.margin_ns) + " (a run's analysis keeps one margin)";
    return false;
  }
  if (!give(log, error)) return false;
  work_ += analysis_->window().calls.size();
  if (work_ > kMaxStepsWork * calls_ + (uint64_t{1} << 24)) {
    error = "the steps so far index " + std::to_string(work_) + " calls for the " + std::to_string(calls_) +
            " read (more than " + std::to_string(kMaxStepsWork) +
            " a call): they settle too little for a run's analysis, which settles calls as it goes";
    return false;
  }
  analysis_->advance(horizon_ns);
  horizon_ns_ = std::max(horizon_ns_, horizon_ns);
  return true;
}

bool Replay::give(EventLog& log, std::string& error) {
  // What the last steps described (StreamingAnalysis::add's promise): every call that started before it had come.
  const uint64_t described = horizon_ns_ > options_.margin_ns ? horizon_ns_ - options_.margin_ns : 0;
  if (!log.calls.empty() && log.calls.front().start_ns < described) {
    error = "call " + std::to_string(log.calls.front().correlation_id) + " starts at " +
            std::to_string(log.calls.front().start_ns) + ", before " + std::to_string(described) +
            ", which an earlier step settled (a run's steps come after every call that started before them)";
    return false;
  }
  // A call given again in a later chunk (one let go already started before what was settled: above).
  const CallVector& window = analysis_->window().calls;
  for (const ApiCall& c : log.calls) {
    const auto at = std::lower_bound(window.begin(), window.end(), c, InLogOrder{});
    if (at != window.end() && at->start_ns == c.start_ns && at->correlation_id == c.correlation_id) {
      error = "call " + std::to_string(c.correlation_id) + " (start " + std::to_string(c.start_ns) +
              ") is given twice (a capture writes each call once)";
      return false;
    }
  }
  // Calls on one thread nest across chunks too: a call in flight comes in a later chunk than the calls it holds.
  // Those of earlier chunks that a new one may overlap are in the window (one let go ended before it started), and
  // end after the first new one starts.
  if (!log.calls.empty()) {
    std::vector<const ApiCall*> around;
    for (const ApiCall& c : window) {
      if (c.end_ns > log.calls.front().start_ns) around.push_back(&c);
    }
    for (const ApiCall& c : log.calls) around.push_back(&c);
    if (!calls_nest(std::move(around), error)) return false;
  }
  calls_ += log.calls.size();
  if (sink_) sink_->write(log.calls, log.ops);
  analysis_->set_marks(log.marks);
  analysis_->add(std::exchange(log.calls, {}), std::exchange(log.ops, {}));
  return true;
}

bool Replay::finish(EventLog& log, std::string& error) {
  if (!analysis_) return true;
  if (sink_) sink_->finishing();
  // What the run counted and did not analyze (shed in a flood, left out of a recording cut short): counts only.
  analysis_->count_unanalyzed(log.carried.calls, log.carried.ops);
  if (!give(log, error)) return false;
  StreamingAnalysis::Result r = analysis_->finish();
  analysis_.reset();
  log.calls = std::move(r.log.calls);
  log.ops = std::move(r.log.ops);
  log.carried = std::move(r.log.carried);
  log.findings = std::move(r.log.findings);
  log.analyzed = true;
  log.run.threshold_ns = options_.analysis.threshold_ns;
  log.run.cost_threshold_ns = options_.analysis.cost_threshold_ns;
  log.run.capture_range = capture_range_;
  return true;
}

}  // namespace asynccheck
