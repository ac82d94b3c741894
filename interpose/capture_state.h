// What the capture's two sides share: the program's threads append their calls to their ThreadLog (capture.cpp,
// in CUPTI's callbacks); the collecting thread takes them each round into the feed, which the analyzing thread
// moves into the streaming analysis (analysis_thread.cpp). Internal to the capture.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/events.h"
#include "analysis/feed.h"
#include "analysis/feed_threads.h"
#include "interpose/blocking_streams.h"
#include "interpose/host_ranges.h"

namespace asynccheck::capture {

// One per application thread that made a watched call. Registered once, never freed: the calls of a thread that
// has exited are still reported.
struct ThreadLog {
  std::mutex mu;  // taken by its own thread on each append (uncontended) and by finish()
  CallVector calls;
  uint32_t thread = 0;
  // Watched calls this thread has entered and not yet left, for finish(): a call in flight when another thread
  // ends the process is missing from the report. Written only by its own thread (a store, no read-modify-write).
  std::atomic<uint32_t> open{0};
  // When the outermost call in flight on this thread started (0: none), for the analysis' horizon: a call
  // still open may need GPU work and calls around its start. Cleared only after the call is in `calls`.
  std::atomic<uint64_t> open_since{0};
  // Calls in `calls` (a relaxed copy of its size), so that the collecting thread sees when enough have piled up
  // to start a round without taking the lock.
  std::atomic<size_t> pending{0};
  // Calls counted instead of appended because `calls` held its share of Global::thread_backlog (the analysis fell
  // behind the program: feed.h, at_thread); `lost` of them were not ordinary (AtThread::Lose). Guarded by mu.
  uint64_t shed = 0;
  uint64_t lost = 0;
};

struct Global {
  std::atomic<bool> active{false};
  std::atomic<bool> finished{false};
  void (*on_first_call)() = nullptr;
  std::once_flag first_call;
  std::atomic<bool> first_call_done{false};  // read on every call: std::call_once alone is a pthread_once each time
  uint64_t threshold_ns = 100'000;
  AnalysisOptions analysis;  // what the calls are judged with
  std::mutex mu;             // guards the fields below; taken once per thread and for marks (rare)
  std::vector<ThreadLog*> threads;
  std::vector<Mark> marks;
  HostRanges ranges;
  BlockingStreams streams;
  std::atomic<uint64_t> stacks_walked{0};     // for the `stats` option
  std::atomic<uint64_t> forced_flushes{0};    // likewise: rounds that flushed CUPTI by force (flush_period)
  std::atomic<uint64_t> ordinary_flushes{0};  // and rounds that flushed it otherwise (pace.h: ordinary_flush)
  // The analysis streams (bounded memory, analysis/feed.h): the collecting thread moves what the application threads
  // captured into the feed each round, and the analyzing thread analyzes it a chunk at a time, so that each chunk (and the wait of
  // finish() for one) stays short however much piled up. Off with compact=0 (every event kept, analyzed at the end).
  bool streaming = false;
  rules::Environment env;
  size_t round_calls = 0;  // compact_round: a round starts when the threads hold this many calls
  size_t max_backlog = 0;  // compact_backlog (0 = no limit)
  // flush_period (0: a forced flush every round) and when the last forced flush was (CUPTI timebase): every record
  // of work finished before it has been taken; between forced flushes the records horizon follows the records that
  // came (AnalysisFeed::records_before). Both the collecting thread's alone.
  uint64_t flush_period_ns = 0;
  uint64_t last_forced_ns = 0;
  // The collecting thread's, for ordinary_flush: the last round's time, the last ordinary flush, and how many
  // buffers CUPTI had handed off at the last round.
  uint64_t last_round_ns = 0, last_ordinary_ns = 0, buffers_seen = 0;
  uint64_t records_ns = 0;  // the last round's records horizon: a flush is forced when it lags flush_period
  // Threads that outrun the analysis threads stay bounded too: a thread whose buffer holds its share of
  // compact_backlog (half of it over the threads, at least a round) counts its sheddable calls instead of keeping
  // them. 0 = no limit (not streaming, or compact_backlog=0).
  size_t thread_backlog = 0;
  std::atomic<size_t> thread_count{0};
  std::mutex central_mu;               // start() and finish(); guards `feed`, which the two threads share (feed.h)
  std::unique_ptr<AnalysisFeed> feed;  // made by start() when the analysis streams
  FeedThreads loops;                   // the collecting and the analyzing thread's (analysis/feed_threads.h)
  // The buffer a round swaps in for a thread's `calls` (analysis/feed_threads.h: ready_spare, return_taken). Only
  // the collecting thread touches it.
  CallVector spare;
};

// The capture's pace (kPoll, kChunkCalls, kMarginNs) is analysis/pace.h's.

Global& global();

// The analysis threads, collecting and analyzing (analysis_thread.cpp). Started by start() when the analysis streams,
// with every signal blocked; stopped by finish(), which waits for a round and a chunk in progress at most `deadline`.
// False if one did not stop (it may be stuck behind a thread that a signal stopped inside CUDA): the feed must then
// not be read.
void start_analysis_thread();
bool stop_analysis_thread(std::chrono::milliseconds deadline);

}  // namespace asynccheck::capture
