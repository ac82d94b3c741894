// The in-process capture: turns CUPTI callbacks into ApiCall events on the calling thread. An ordinary call
// (fast, not predicted to block) costs two timestamps, a table lookup, argument decoding, a registry lookup and
// an append to a thread-local buffer: no global lock, no stack walk, no I/O.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/events.h"

namespace asynccheck::capture {

// Before start(): whether to compact the captured events as the run goes (analysis/compact.h; bounded memory),
// and the environment the analysis describes calls with. Off, every event is kept until finish().
void set_compaction(bool on, const rules::Environment& env);

// What compaction did, for the `stats` option (docs/performance.md): rounds and chunks run, how long they took,
// how far the threads got ahead of them, and what was kept at the end.
struct Stats {
  uint64_t rounds = 0, chunks = 0;
  uint64_t refused_or_unchanged = 0;  // chunks after which the log stayed whole (nothing to drop, or the check refused)
  uint64_t largest_chunk = 0;         // calls
  uint64_t peak_backlog = 0;          // calls taken from the threads and waiting for a chunk, at most
  uint64_t compact_ns = 0, longest_chunk_ns = 0;
  uint64_t kept_calls = 0, kept_ops = 0, compacted_calls = 0;
};
Stats stats();

// Subscribes to CUPTI and starts recording. On failure returns false with a one-line reason.
// `on_first_call` runs once, on the first watched call (after the CUDA runtime registered its own exit
// handlers, so an atexit handler registered there runs before the runtime tears down).
bool start(uint64_t threshold_ns, size_t activity_buffer_bytes, void (*on_first_call)(), std::string& error);

// Stops recording new calls, flushes CUPTI and returns everything captured so far. Callable once (later calls
// return an empty log), from any thread, while other threads still make CUDA calls. run.complete is false when
// a call was in flight on some thread or a stopped thread's part could not be read.
EventLog finish();

}  // namespace asynccheck::capture
