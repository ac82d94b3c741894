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
  using OptionsFor = std::function<StreamingOptions(EventLog& head)>;
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
  // into the analysis, which advances to `horizon_ns`. False, with `error`, for steps no run takes: a margin that
  // changes, a horizon that goes back, or a call that starts before what an earlier step settled.
  bool step(EventLog& log, uint64_t horizon_ns, uint64_t margin_ns, std::string& error);
  // After the last line, when steps were taken: the rest of the events, then everything left is judged; `log`
  // becomes the analysis (its examples and carried sites, analyzed), its run's thresholds those it was judged at.
  // False as step() is.
  bool finish(EventLog& log, std::string& error);
  bool replayed() const { return replayed_; }  // a step was taken

 private:
  bool give(EventLog& log, std::string& error);  // the events read since the last step, to the analysis

  OptionsFor options_for_;
  EventSink* sink_;
  ReleaseSink* release_;
  StreamingOptions options_;
  std::string capture_range_;  // the one judged with
  std::unique_ptr<StreamingAnalysis> analysis_;
  uint64_t horizon_ns_ = 0;
  bool replayed_ = false;
};

}  // namespace asynccheck
