#include "report/recording_stream.h"

#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "analysis/recording.h"
#include "report/report.h"

namespace asynccheck::report {

RecordingStream::~RecordingStream() {
  if (fd_ >= 0) ::close(fd_);  // not closed: the temporary file stays, without `end`
}

bool RecordingStream::open(const std::string& path, bool overwrite, const RunInfo& run,
                           const std::vector<std::string>& api_names, Tables tables, std::string& error) {
  std::lock_guard lock(mu_);
  path_ = path;
  if (!path.empty() && path[0] != '/') {  // moved into place at exit: the program may have changed directory
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) path_ = std::string(cwd) + "/" + path;
  }
  fd_ = open_beside(path_, tmp_, error);
  if (fd_ < 0) return false;
  overwrite_ = overwrite;
  tables_ = std::move(tables);
  std::ostringstream head;
  write_recording_head(head, run, api_names);
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
  std::lock_guard lock(mu_);
  if (fd_ < 0 || !error_.empty()) return;
  text_.clear();              // its capacity kept: the next chunk's text is about as long
  std::vector<Stack> stacks;  // only those not written yet: the whole table each chunk cost O(stacks) a chunk
  std::vector<NvtxRange> ranges;
  if (tables_) tables_(stacks_written_, nvtx_written_, stacks, ranges);
  append_stacks(text_, stacks, 0, stacks_written_);
  append_nvtx_ranges(text_, ranges, 0, nvtx_written_);
  stacks_written_ += stacks.size();
  nvtx_written_ += ranges.size();
  const bool dangling =
      std::any_of(calls.begin(), calls.end(), [&](const ApiCall& c) { return c.stack > stacks_written_; });
  if (dangling) {
    std::vector<ApiCall> fixed = calls;
    for (ApiCall& c : fixed) c.stack = c.stack > stacks_written_ ? 0 : c.stack;
    append_events(text_, fixed, ops);
  } else {
    append_events(text_, calls, ops);
  }
  write_all(fd_, text_, path_, error_);
}

bool RecordingStream::close(const EventLog& log, std::string& error) {
  std::lock_guard lock(mu_);
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
