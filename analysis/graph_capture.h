// Stream capture, followed through the calls in program order: which streams are capturing into a graph
// (cudaStreamBeginCapture ... cudaStreamEndCapture, and the cuStream* equivalents), so that the analysis can tell a
// command that was executed from one that was only recorded into a graph.
//
// What the CUDA documentation says, and what is modelled here:
//  - Work issued to a stream in capture mode is not executed but recorded into a graph; it produces no activity
//    records until the graph is launched (and then under the graph launch's correlation id).
//  - A stream joins a capture when it waits (cudaStreamWaitEvent) on an event recorded in a capturing stream; it
//    leaves when the capture ends on the stream where it began (the origin).
//  - Capture cannot begin on the legacy stream; the per-thread default stream can capture (one per thread).
//  - Calls the capture refuses fail at once with a stream-capture error (900-908: a synchronization on a capturing
//    stream, any use of the legacy stream while a blocking stream captures, unsafe calls in global mode): they
//    did nothing. The capture modes (global, thread-local, relaxed) only decide which calls are refused, so the
//    error code is what the analysis reads, not the mode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>

#include "analysis/events.h"

namespace asynccheck {

class CaptureTracker {
 public:
  // Reads the next call in program order; `d` is its description with the stream kind already completed. Sets
  // d.captured when the call was issued to a capturing stream. True when the call changed the capture state that
  // later calls are described with (a capture began or ended, a stream joined, an event entered or left a capture):
  // compaction keeps such calls.
  bool observe(const ApiCall& c, rules::CallDescription& d);
  // Whether observe() would set d.captured for the next call `c` (described up to its stream kind), changing nothing.
  bool captures(const ApiCall& c, const rules::CallDescription& d) const;

 private:
  using Key = std::pair<uint64_t, uint32_t>;  // (stream handle, thread for the per-thread default stream, else 0)
  static Key key_of(const ApiCall& c, const rules::CallDescription& d);
  void end(size_t capture);

  std::map<Key, size_t> capturing_;              // stream -> the capture it belongs to
  std::map<size_t, Key> origin_;                 // active capture -> the stream it began on
  std::unordered_map<uint64_t, size_t> events_;  // event -> the capture it was last recorded in
  size_t next_ = 0;
};

// A CUDA error code of stream capture (cudaErrorStreamCaptureUnsupported .. cudaErrorStreamCaptureWrongThread,
// 900-908, the same numbers as CUDA_ERROR_STREAM_CAPTURE_*): the call was refused and did nothing.
bool is_capture_error(int32_t result);

}  // namespace asynccheck
