#include "report/recording_stream.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <utility>

#include "analysis/recording.h"
#include "report/report.h"

namespace asynccheck::report {

RecordingStream::~RecordingStream() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    closed_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();  // not closed: what was queued is written, the temporary file stays
  if (fd_ >= 0) ::close(fd_);
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
  // With every signal blocked: the program's signals must reach its own threads, not ours.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  writer_ = std::thread([this] { writer_loop(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return true;
}

void RecordingStream::write(const std::vector<ApiCall>& calls, const std::vector<GpuOp>& ops) { queue({calls, ops}); }

void RecordingStream::take(std::vector<ApiCall>&& calls, std::vector<GpuOp>&& ops) {
  queue({std::move(calls), std::move(ops)});
}

void RecordingStream::queue(Batch batch) {
  const size_t events = batch.calls.size() + batch.ops.size();
  std::unique_lock lock(mu_);
  if (closed_ || !writer_.joinable() || !dropped_.empty()) return;
  const bool room = cv_.wait_for(lock, limits_.room_wait, [&] {
    return queued_events_ == 0 || queued_events_ + events <= limits_.max_queued_events;
  });
  if (!room) {
    dropped_ = "its events came faster than they could be written (" + std::to_string(queued_events_) + " waited " +
               std::to_string(limits_.room_wait.count()) + " ms to be)";
    return;
  }
  queued_events_ += events;
  queue_.push_back(std::move(batch));
  cv_.notify_all();
}

void RecordingStream::writer_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // told to stop, and nothing left
    Batch batch = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    write_now(batch);
    const size_t events = batch.calls.size() + batch.ops.size();
    batch = {};  // freed before the next waits
    lock.lock();
    queued_events_ -= events;
    busy_ = false;
    cv_.notify_all();
  }
}

void RecordingStream::write_now(const Batch& batch) {
  if (fd_ < 0 || !error_.empty()) return;
  text_.clear();              // its capacity kept: the next batch's text is about as long
  std::vector<Stack> stacks;  // only those not written yet: the whole table each chunk cost O(stacks) a chunk
  std::vector<NvtxRange> ranges;
  if (tables_) tables_(stacks_written_, nvtx_written_, stacks, ranges);
  append_stacks(text_, stacks, 0, stacks_written_);
  append_nvtx_ranges(text_, ranges, 0, nvtx_written_);
  stacks_written_ += stacks.size();
  nvtx_written_ += ranges.size();
  const bool dangling =
      std::any_of(batch.calls.begin(), batch.calls.end(), [&](const ApiCall& c) { return c.stack > stacks_written_; });
  if (dangling) {
    std::vector<ApiCall> fixed = batch.calls;
    for (ApiCall& c : fixed) c.stack = c.stack > stacks_written_ ? 0 : c.stack;
    append_events(text_, fixed, batch.ops);
  } else {
    append_events(text_, batch.calls, batch.ops);
  }
  write_all(fd_, text_, path_, error_);
}

bool RecordingStream::flush(std::chrono::milliseconds deadline) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, deadline, [&] { return queue_.empty() && !busy_; });
}

bool RecordingStream::close(const EventLog& log, std::string& error) {
  std::unique_lock lock(mu_);
  if (fd_ < 0 || closed_) {
    error = "the recording '" + path_ + "' was not open";
    return false;
  }
  closed_ = true;
  const bool drained = cv_.wait_for(lock, limits_.drain_wait, [&] { return queue_.empty() && !busy_; });
  stop_ = true;
  cv_.notify_all();
  if (!drained) {
    // The writer is stuck (a file system that does not answer): it keeps the file; the recording stays
    // temporary and incomplete.
    writer_.detach();
    error = "the recording '" + path_ + "' was not finished: its last events were not written within " +
            std::to_string(limits_.drain_wait.count()) + " ms; " + tmp_ + " holds what was";
    return false;
  }
  lock.unlock();
  if (writer_.joinable()) writer_.join();  // it leaves at once: nothing is queued
  if (error_.empty() && !dropped_.empty()) error_ = "the recording '" + path_ + "' is incomplete: " + dropped_;
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
