// A recording written as the run goes (the `save` option while the analysis streams): every event the analysis is
// given, chunk by chunk, so that the run can be analyzed again (another threshold, a trace) without the capture
// holding it in memory. Written to a temporary file beside the path and moved into place by close(); a run that
// ends without close() (a crash) leaves the temporary file, readable but without `end` (incomplete).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "analysis/events.h"
#include "analysis/feed.h"

namespace asynccheck::report {

class RecordingStream : public EventSink {
 public:
  // The stacks and NVTX range names interned so far (ids 1, 2, ... in order) from the index given on (those written
  // already are not asked for again): those the events refer to are written before them.
  using Tables = std::function<void(size_t stacks_from, size_t ranges_from, std::vector<Stack>& stacks,
                                    std::vector<NvtxRange>& ranges)>;

  RecordingStream() = default;
  RecordingStream(const RecordingStream&) = delete;
  RecordingStream& operator=(const RecordingStream&) = delete;
  ~RecordingStream() override;

  // `run`: what is known of the run at its start (program, arguments, pid, thresholds, settings). A relative `path`
  // is the working directory's at open(), whatever the program does later.
  bool open(const std::string& path, bool overwrite, const RunInfo& run, const std::vector<std::string>& api_names,
            Tables tables, std::string& error);
  bool is_open() const { return fd_ >= 0; }
  // On the feed's thread. A write that fails (a full disk) stops the recording; close() says why. Calls whose stack
  // was not interned yet (the interner could not be read in time) are written without one.
  void write(const std::vector<ApiCall>& calls, const std::vector<GpuOp>& ops) override;
  // The tail (recording.h: write_recording_tail) from `log`: the run, modules, every stack and NVTX name, symbols,
  // what was counted but not kept (carried calls and ops), marks. Then moves the file into place. Safe against a
  // write() in progress on a feed thread that did not stop in time: what comes after close() is not written.
  bool close(const EventLog& log, std::string& error);

 private:
  std::mutex mu_;  // write() vs close()
  int fd_ = -1;
  std::string path_, tmp_, error_;
  bool overwrite_ = false;
  Tables tables_;
  size_t stacks_written_ = 0, nvtx_written_ = 0;
  std::string text_;  // write()'s text, reused from chunk to chunk
};

}  // namespace asynccheck::report
