// A recording written as the run goes (the `save` option while the analysis streams): every event the analysis is
// given, chunk by chunk, so that the run can be analyzed again (another threshold, a trace) without the capture
// holding it in memory. Written to a temporary file beside the path and moved into place by close(); a run that
// ends without close() (a crash) leaves the temporary file, readable but without `end` (incomplete).
//
// The events are formatted and written on a thread of the stream's own: the analysis' thread only queues them. In an
// 8-thread flood (~1M calls a second) formatting and writing them on the analyzing thread cost it ~0.5 us a call,
// it fell behind, and 1M-2M of 4M calls were shed (docs/performance.md).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "analysis/events.h"
#include "analysis/feed.h"

namespace asynccheck::report {

// How much may wait for the stream's thread, and how long the feed and close() wait for it.
struct RecordingLimits {
  size_t max_queued_events = 256 * 1024;
  std::chrono::milliseconds room_wait{10'000};   // write() for room in the queue
  std::chrono::milliseconds drain_wait{10'000};  // close() for what was queued
};

class RecordingStream : public EventSink {
 public:
  // The stacks and NVTX range names interned so far (ids 1, 2, ... in order) from the index given on (those written
  // already are not asked for again): those the events refer to are written before them.
  using Tables = std::function<void(size_t stacks_from, size_t ranges_from, std::vector<Stack>& stacks,
                                    std::vector<NvtxRange>& ranges)>;

  explicit RecordingStream(RecordingLimits limits = {}) : limits_(limits) {}
  RecordingStream(const RecordingStream&) = delete;
  RecordingStream& operator=(const RecordingStream&) = delete;
  ~RecordingStream() override;

  // `run`: what is known of the run at its start (program, arguments, pid, thresholds, settings). A relative `path`
  // is the working directory's at open(), whatever the program does later.
  bool open(const std::string& path, bool overwrite, const RunInfo& run, const std::vector<std::string>& api_names,
            Tables tables, std::string& error);
  // On the feed's thread: queued for the stream's thread. Past RecordingLimits::max_queued_events waiting, waits for room, at
  // most room_wait; then the recording fails (close() says why) rather than hold the analysis or grow without bound. Calls
  // whose stack was not interned yet (the interner could not be read in time) are written without one.
  void write(const std::vector<ApiCall>& calls, const std::vector<GpuOp>& ops) override;  // copies them
  void take(std::vector<ApiCall>&& calls, std::vector<GpuOp>&& ops) override;
  // Waits until everything queued is written, at most `deadline`: false if it was not (tests read the file then).
  bool flush(std::chrono::milliseconds deadline);
  // The tail (recording.h: write_recording_tail) from `log`: the run, modules, every stack and NVTX name, symbols,
  // what was counted but not kept (carried calls and ops), marks; once what was queued is written (at most
  // RecordingLimits::drain_wait). Then moves the file into place. A write() after close() (a feed thread that did not stop in
  // time) is not written.
  bool close(const EventLog& log, std::string& error);

 private:
  struct Batch {
    std::vector<ApiCall> calls;
    std::vector<GpuOp> ops;
  };
  void queue(Batch batch);
  void writer_loop();
  void write_now(const Batch& batch);  // on the writer thread only

  RecordingLimits limits_;
  // Under mu_: the queue and the writer's state. fd_, text_, error_ and what was written are the writer's while
  // it runs, close()'s once it has stopped.
  std::mutex mu_;
  std::condition_variable cv_;  // a batch queued, one written, the writer told to stop
  std::deque<Batch> queue_;
  size_t queued_events_ = 0;
  bool busy_ = false;    // the writer holds a batch it took off the queue
  bool stop_ = false;    // the writer leaves once the queue is empty
  bool closed_ = false;  // close() ran: later writes are not written
  std::string dropped_;  // why events were dropped (no room in time): the recording fails with it
  std::thread writer_;

  int fd_ = -1;
  std::string path_, tmp_, error_;
  bool overwrite_ = false;
  Tables tables_;
  size_t stacks_written_ = 0, nvtx_written_ = 0;
  std::string text_;  // a batch's text, reused from batch to batch
};

}  // namespace asynccheck::report
