// Whether the program may have work in a blocking stream besides the legacy default stream, from the calls seen so
// far: a call on a stream created without cudaStreamNonBlocking, on the per-thread default stream (it synchronizes
// with the legacy one), or on a stream handle we never saw created (made before we attached, or by a path we do not
// watch; the analysis takes those for blocking streams too: analysis/analyze.cpp, blocking_kind).
//
// Until then, no command on the legacy default stream can wait for, or hold back, another stream's work, which is
// all the legacy-stream-serialization rule measures; so the capture does not walk those commands' stacks (a stack
// is what a finding needs). PyTorch enqueues its default stream's work on the legacy stream and its other streams
// are non-blocking (one blocking stream is created in a training process, and never given work): a stack walk per
// launch (through libcuda and libtorch, then the Python frames, ~10 us) was most of what asynccheck added to a
// launch-bound training loop beyond the CUPTI floor (docs/performance-log.md).
//
// What this gives up: a legacy-stream command whose stack was skipped can still be a finding, without a call site
// (the report shows its API and rule, no stack): one enqueued before any other blocking stream had work whose GPU
// work is still running when the first such work is enqueued; one enqueued on another thread between that first
// work and its call's return (we see a call when it returns); one held back by GPU work no watched call enqueued
// (the analysis counts such work as a blocking stream's). Such calls are never shed (analysis/feed.h). Once
// set, the answer never goes back.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_set>

#include "analysis/events.h"

namespace asynccheck {

class BlockingStreams {
 public:
  // Every call the capture records, before its stack is decided; `c` decoded (entry and, on success, exit).
  // Safe from any thread. Cheap for the common case: a call on the legacy stream, or on the non-blocking stream
  // this thread used last, takes no lock. A stream's creation or destruction is not a use of it.
  void observe(const ApiCall& c);
  bool others_possible() const { return others_.load(std::memory_order_relaxed); }

  BlockingStreams();
  BlockingStreams(const BlockingStreams&) = delete;
  BlockingStreams& operator=(const BlockingStreams&) = delete;

 private:
  void set() { others_.store(true, std::memory_order_relaxed); }

  const uint64_t id_;  // unique per instance, for the threads' caches (an address can be reused)
  std::atomic<bool> others_{false};
  // Non-blocking streams created and not yet destroyed. A destroy (or a blocking stream created with a handle
  // still here) bumps the generation, which invalidates every thread's one-entry cache of the last stream it found
  // here (the handle may be reused by another stream).
  std::mutex mu_;
  std::unordered_set<uint64_t> non_blocking_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace asynccheck
