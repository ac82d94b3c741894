#include "analysis/graph_capture.h"

#include "rules/predict.h"

namespace asynccheck {
namespace {

using rules::ApiKind;
using rules::StreamKind;

constexpr int32_t kCaptureWrongThread = 908;  // cudaErrorStreamCaptureWrongThread: the end was refused

// Synchronizations and queries of a capturing stream are not recorded: the capture refuses those (is_capture_error).

}  // namespace

bool is_capture_error(int32_t result) { return result >= 900 && result <= 908; }

CaptureTracker::Key CaptureTracker::key_of(const ApiCall& c, const rules::CallDescription& d) {
  // The description's stream kind already says what handle 0 meant for this call (legacy or per-thread).
  if (d.stream == StreamKind::PerThreadDefault) return {kStreamPerThreadHandle, c.thread};
  if (d.stream == StreamKind::LegacyDefault) return {kStreamLegacyHandle, 0};
  return {c.stream, 0};
}

void CaptureTracker::end(size_t capture) {
  for (auto it = capturing_.begin(); it != capturing_.end();)
    it = it->second == capture ? capturing_.erase(it) : std::next(it);
  for (auto it = events_.begin(); it != events_.end();) it = it->second == capture ? events_.erase(it) : std::next(it);
  origin_.erase(capture);
}

bool CaptureTracker::captures(const ApiCall& c, const rules::CallDescription& d) const {
  if (!rules::enqueues_stream_work(d.api) || d.api == ApiKind::CaptureBegin || d.api == ApiKind::CaptureEnd)
    return false;
  if (capturing_.count(key_of(c, d))) return true;
  return c.result == 0 && d.api == ApiKind::StreamWaitEvent && events_.count(c.handle);
}

bool CaptureTracker::observe(const ApiCall& c, rules::CallDescription& d) {
  const bool ok = c.result == 0;
  const Key key = key_of(c, d);
  auto stream = capturing_.find(key);
  switch (d.api) {
    case ApiKind::CaptureBegin: {
      // The legacy stream cannot capture, and a stream captures one sequence at a time: such a begin fails.
      if (!ok || stream != capturing_.end() || key.first == kStreamLegacyHandle) return false;
      const size_t id = next_++;
      capturing_[key] = id;
      origin_[id] = key;
      return true;
    }
    case ApiKind::CaptureEnd: {
      // Ends the capture only on the stream where it began. An invalidated capture ends too (with an error and no
      // graph); an end from another thread in a non-relaxed mode is refused and the capture goes on.
      if (stream == capturing_.end() || c.result == kCaptureWrongThread) return false;
      const size_t id = stream->second;
      if (origin_.at(id) != key) return false;
      end(id);
      return true;
    }
    default: break;
  }
  if (!rules::enqueues_stream_work(d.api)) return false;
  if (stream == capturing_.end()) {
    if (!ok) return false;
    auto event = events_.find(c.handle);
    if (d.api == ApiKind::StreamWaitEvent && event != events_.end()) {
      capturing_[key] = event->second;  // joins the capture the event was recorded in; the wait is its first node
      d.captured = true;
      return true;
    }
    if (d.api == ApiKind::EventRecord && event != events_.end()) {
      events_.erase(event);  // recorded again outside the capture: waiting on it no longer joins
      return true;
    }
    return false;
  }
  d.captured = true;
  if (d.api == ApiKind::EventRecord && ok) {
    events_[c.handle] = stream->second;
    return true;
  }
  return false;
}

}  // namespace asynccheck
