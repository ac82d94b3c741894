// A recording written as the run goes (the `save` option while the analysis streams): every event the analysis is
// given, chunk by chunk, so that the run can be analyzed again (another threshold, a trace) without the capture
// holding it in memory. Written to a temporary file beside the path and moved into place by close(); a run that
// ends without close() (a crash) leaves the temporary file, readable but without `end` (incomplete).
//
// The events are formatted and written on a thread of the stream's own: the analysis' thread only queues them. In an
// 8-thread flood (~1M calls a second) formatting and writing them on the analyzing thread cost it ~0.5 us a call,
// it fell behind, and 1M-2M of 4M calls were shed (docs/performance-log.md).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
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
  // write() for room in the queue. Short: the analysis' thread waits, holding the analysis (the collecting thread,
  // shedding, waits for it in turn). Past it the recording stops where it is (close() says so).
  std::chrono::milliseconds room_wait{100};
  std::chrono::milliseconds drain_wait{10'000};  // close() for what was queued
};

class RecordingStream : public EventSink {
 public:
  // The stacks and NVTX range names interned so far (ids 1, 2, ... in order) from the index given on (those written
  // already are not asked for again), or none if they could not be read in time: those the events refer to are
  // written before them. Called on the stream's thread.
  using Tables = std::function<void(size_t stacks_from, size_t ranges_from, std::vector<Stack>& stacks,
                                    std::vector<NvtxRange>& ranges)>;

  explicit RecordingStream(RecordingLimits limits = {});
  RecordingStream(const RecordingStream&) = delete;
  RecordingStream& operator=(const RecordingStream&) = delete;
  // Not closed: what was queued is written (at most drain_wait), and the temporary file stays, incomplete.
  ~RecordingStream() override;

  // `run`: what is known of the run at its start (program, arguments, pid, thresholds, settings). A relative `path`
  // is the working directory's at open(), whatever the program does later.
  bool open(const std::string& path, bool overwrite, const RunInfo& run, const std::vector<std::string>& api_names,
            Tables tables, std::string& error);
  // On the feed's thread: queued for the stream's thread. With max_queued_events waiting (the batch being written
  // included), waits for room at most room_wait; then that batch and every later one are not written: the recording
  // is what came before, said incomplete, with the calls and operations left out counted (close()). After
  // finishing(), no wait: close() bounds the rest. Calls whose stack or NVTX range was not written yet (the tables
  // could not be read in time) are written without one.
  void write(const CallVector& calls, const OpVector& ops) override;  // copies them
  void take(CallVector&& calls, OpVector&& ops) override;
  void finishing() override;
  // The step after the events queued so far, and the marks not written yet (recording.h: `step`), queued without a
  // wait; none after the recording was cut.
  void advanced(uint64_t horizon_ns, uint64_t margin_ns, const std::vector<Mark>& marks) override;
  // Waits until everything queued is written, at most `deadline`: false if it was not (tests read the file then).
  bool flush(std::chrono::milliseconds deadline);
  // Once what was queued is written (at most drain_wait), the tail (recording.h: write_recording_tail) from `log`:
  // the run, modules, every stack and NVTX name, symbols, what was counted but not kept (carried calls and ops),
  // the marks not written in steps; then moves the file into place. Events left out (write()) make the tail say the
  // run incomplete and count them as carried, and `warning` says so. A write() after close() (a feed thread that did
  // not stop in time) is not written. False, with `error`, when there is no recording: nothing was moved into place.
  bool close(const EventLog& log, std::string& error, std::string& warning);

 private:
  struct Writer;  // what the stream's thread uses: shared with it, so that it outlives a stream it had to leave
  std::shared_ptr<Writer> w_;
};

}  // namespace asynccheck::report
