#include "report/recording_stream.h"

#include <unistd.h>

#include <sstream>

#include "analysis/recording.h"
#include "report/report.h"

namespace asynccheck::report {

RecordingStream::~RecordingStream() {
  if (fd_ >= 0) ::close(fd_);  // not closed: the temporary file stays, without `end`
}

bool RecordingStream::open(const std::string& path, bool overwrite, const std::vector<std::string>& api_names,
                           Tables tables, std::string& error) {
  fd_ = open_beside(path, tmp_, error);
  if (fd_ < 0) return false;
  path_ = path;
  overwrite_ = overwrite;
  tables_ = std::move(tables);
  std::ostringstream head;
  write_recording_head(head, api_names);
  if (!write_all(fd_, head.str(), path_, error_)) {
    error = error_;
    ::close(fd_);
    fd_ = -1;
    unlink(tmp_.c_str());
    return false;
  }
  return true;
}

void RecordingStream::write(const std::vector<ApiCall>& calls, const std::vector<GpuOp>& ops) {
  if (fd_ < 0 || !error_.empty()) return;
  std::ostringstream o;
  std::vector<Stack> stacks;
  std::vector<NvtxRange> ranges;
  if (tables_) tables_(stacks, ranges);
  write_stacks(o, stacks, stacks_written_);
  write_nvtx_ranges(o, ranges, nvtx_written_);
  stacks_written_ = std::max(stacks_written_, stacks.size());
  nvtx_written_ = std::max(nvtx_written_, ranges.size());
  write_events(o, calls, ops);
  write_all(fd_, o.str(), path_, error_);
}

bool RecordingStream::close(const EventLog& log, std::string& error) {
  if (fd_ < 0) {
    error = "the recording '" + path_ + "' was not open";
    return false;
  }
  if (error_.empty()) {
    std::ostringstream o;
    write_recording_tail(o, log, stacks_written_, nvtx_written_);
    write_all(fd_, o.str(), path_, error_);
  }
  ::close(fd_);
  fd_ = -1;
  if (!error_.empty()) {
    error = error_;
    unlink(tmp_.c_str());
    return false;
  }
  return move_into_place(tmp_, path_, overwrite_, error);
}

}  // namespace asynccheck::report
