// A recording written as the run went (report/recording_stream.h) analyzed offline the way the run analyzed it: its
// `step` lines say where the run's analysis advanced after each chunk of events, and with which margin, so that
// read_recording gives the events to one StreamingAnalysis chunk by chunk and takes the same steps. The recording
// is never held whole (a flood's 900 MB recording took 1.8 GB to analyze whole), and at the run's own options the
// report is the live one: the same code, in the same steps. Other options (threshold, cost threshold, capture range)
// judge the same events at those.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "analysis/events.h"
#include "analysis/streaming.h"

namespace asynccheck {

class EventSink;

class Replay {
 public:
  // The options to analyze with, from what the recording said before its first step (its run line, its tables),
  // which it may set to those (the run's thresholds: those the report then states); `margin_ns` is the recording's.
  // False, with `error`, stops the reading (an output the analysis would write to cannot be opened).
  using OptionsFor = std::function<bool(EventLog& head, StreamingOptions& options, std::string& error)>;
  // `sink`: given each chunk's events before the analysis is (a trace places calls on lanes); `release`: what the
  // analysis lets go (the trace drawn as it goes). Both may be null.
  explicit Replay(OptionsFor options, EventSink* sink = nullptr, ReleaseSink* release = nullptr);
  ~Replay();
  // Before the first step (OptionsFor may set them: a trace opens once the API names are known).
  void set_sinks(EventSink* sink, ReleaseSink* release) {
    sink_ = sink;
    release_ = release;
  }

  // read_recording's, at a `step` line: the chunk read since the last one (log.calls, in log order; log.ops) goes
  // into the analysis, which advances to `horizon_ns`. A horizon may go back (a round that could not lock a thread
  // publishes 0): what was settled stays settled, as in the run. False, with `error`, for what no run writes: a
  // margin that changes, a step that judges everything (only the end does), a call that starts before what an
  // earlier step settled or that an earlier chunk gave already, or steps that settle so little that the analysis
  // would index the same calls again and again (kMaxStepsWork).
  bool step(EventLog& log, uint64_t horizon_ns, uint64_t margin_ns, std::string& error);
  // After the last line, when steps were taken: the rest of the events, then everything left is judged; `log`
  // becomes the analysis (its examples and carried sites, analyzed), its run's thresholds those it was judged at.
  // False as step() is.
  bool finish(EventLog& log, std::string& error);
  bool replayed() const { return replayed_; }  // a step was taken

  // Each step indexes the calls not judged yet (the window): the calls a recording's steps index, summed over its
  // steps, per call it holds. A live run's steps come at most every chunk and settle what the margin lets them (a
  // flood's window of 130k calls at chunks of 32k: ~4); a file whose steps settle nothing would make the analysis
  // quadratic in its length.
  static constexpr uint64_t kMaxStepsWork = 64;

 private:
  bool give(EventLog& log, std::string& error);  // the events read since the last step, to the analysis

  OptionsFor options_for_;
  EventSink* sink_;
  ReleaseSink* release_;
  StreamingOptions options_;
  std::string capture_range_;  // the one judged with
  std::unique_ptr<StreamingAnalysis> analysis_;
  uint64_t horizon_ns_ = 0;        // the furthest step so far
  uint64_t calls_ = 0, work_ = 0;  // calls given, and the window's calls summed over the steps
  bool replayed_ = false;
};

}  // namespace asynccheck
