// The in-process capture: turns CUPTI callbacks into ApiCall events on the calling thread. An ordinary call
// (fast, not predicted to block) costs two timestamps, a table lookup, argument decoding, a registry lookup and
// an append to a thread-local buffer: no global lock, no stack walk, no I/O.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/analyze.h"
#include "analysis/feed.h"
#include "analysis/streaming.h"
#include "analysis/events.h"

namespace asynccheck::capture {

// What compaction did, for the `stats` option (analysis/feed.h); all zero with compaction off.
using Stats = FeedStats;
Stats stats();
// How many call stacks the capture walked (the calls that matter: capture.cpp, on_exit), for the `stats` option.
uint64_t stacks_walked();
// Compaction rounds that flushed CUPTI by force (every round unless flush_period), for the `stats` option.
uint64_t forced_flushes();
uint64_t ordinary_flushes();  // rounds that flushed CUPTI without forcing it (analysis/pace.h: ordinary_flush)

// How the capture records and analyzes (the options of options.def that concern it, in one place).
struct Options {
  AnalysisOptions analysis;  // the thresholds the calls are judged with (the report's own)
  rules::Environment env;    // what the analysis describes calls with (lazy loading, CUDA_LAUNCH_BLOCKING)
  // Analyze the calls as the run goes (analysis/streaming.h; bounded memory). Off (compact=0), every event is kept
  // and analyzed at finish().
  bool streaming = true;
  // The options of the same names (their defaults, and why: options/options.def), set by core.cpp.
  size_t round_calls = 0;        // compact_round
  size_t max_backlog = 0;        // compact_backlog (0 = no limit)
  uint64_t flush_period_ns = 0;  // flush_period (0: a forced flush every round)
  size_t activity_buffer_bytes = 0;
  size_t device_buffers = 0;       // 0: CUPTI's default
  size_t device_buffer_bytes = 0;  // 0: CUPTI's default
  // Runs once, on the first watched call (after the CUDA runtime registered its own exit handlers, so an atexit
  // handler registered there runs before the runtime tears down).
  void (*on_first_call)() = nullptr;
  // With streaming: every event the analysis is given goes here too (a recording written as the run goes).
  EventSink* sink = nullptr;
  // With streaming: what the analysis lets go goes here (a trace written as the run goes: report/trace_stream.h).
  ReleaseSink* release_sink = nullptr;
};

// Subscribes to CUPTI and starts recording. On failure returns false with a one-line reason. `warning`: set when
// recording goes on with less than was asked (cupti::enable_activity).
bool start(const Options& options, std::string& error, std::string& warning);

// Stops recording new calls, flushes CUPTI, judges what is left and returns the analysis with the events it names
// (streaming.h: Result; every event when the analysis did not run as the run went). Callable once (later calls
// return an empty result), from any thread, while other threads still make CUDA calls. run.complete is false when
// a call was in flight on some thread or a stopped thread's part could not be read; run.monitoring is
// "stopped: WHY" when our CUPTI monitoring did not stand to the end (cupti/health.h), "on" otherwise.
StreamingAnalysis::Result finish();

}  // namespace asynccheck::capture
