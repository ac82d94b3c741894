// The in-process capture: turns CUPTI callbacks into ApiCall events on the calling thread. An ordinary call
// (fast, not predicted to block) costs two timestamps, a table lookup, argument decoding, a registry lookup and
// an append to a thread-local buffer: no global lock, no stack walk, no I/O.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/analyze.h"
#include "analysis/compactor.h"
#include "analysis/streaming.h"
#include "analysis/events.h"

namespace asynccheck::capture {

// Before start(): whether to analyze the captured events as the run goes (analysis/streaming.h; bounded memory),
// and the environment the analysis describes calls with. Off, every event is kept and analyzed at finish() (a trace
// or a recording of the run needs them all).
// `round_calls`, `max_backlog` and `flush_period_ns`: the compact_round, compact_backlog and flush_period options
// (options.def).
void set_compaction(bool on, const rules::Environment& env, size_t round_calls, size_t max_backlog,
                    uint64_t flush_period_ns = 0);

// What compaction did, for the `stats` option (analysis/compactor.h); all zero with compaction off.
using Stats = CompactorStats;
Stats stats();
// How many call stacks the capture walked (the calls that matter: capture.cpp, on_exit), for the `stats` option.
uint64_t stacks_walked();
// Compaction rounds that flushed CUPTI by force (every round unless flush_period), for the `stats` option.
uint64_t forced_flushes();

// Subscribes to CUPTI and starts recording. On failure returns false with a one-line reason.
// `on_first_call` runs once, on the first watched call (after the CUDA runtime registered its own exit
// handlers, so an atexit handler registered there runs before the runtime tears down).
// `warning`: set when recording goes on with less than was asked (cupti::enable_activity).
// `analysis`: the thresholds the compaction judges calls with (the report's own, so that it reports the same).
bool start(const AnalysisOptions& analysis, size_t activity_buffer_bytes, size_t device_buffers, size_t device_buffer_bytes,
           void (*on_first_call)(),
           std::string& error, std::string& warning);

// Stops recording new calls, flushes CUPTI, judges what is left and returns the analysis with the events it names
// (streaming.h: Result; every event when the analysis did not run as the run went). Callable once (later calls
// return an empty result), from any thread, while other threads still make CUDA calls. run.complete is false when
// a call was in flight on some thread or a stopped thread's part could not be read.
StreamingAnalysis::Result finish();

}  // namespace asynccheck::capture
