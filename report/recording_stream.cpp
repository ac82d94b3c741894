#include "report/recording_stream.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "analysis/recording.h"
#include "common/signals_blocked.h"
#include "report/report.h"

namespace asynccheck::report {

struct RecordingStream::Writer {
  struct Batch {
    CallVector calls;
    OpVector ops;
    // A step the analysis took after these events (none: `step` false), with the marks not queued before.
    bool step = false;
    uint64_t horizon_ns = 0, margin_ns = 0;
    std::vector<Mark> marks;
  };

  explicit Writer(RecordingLimits l) : limits(l) {}
  void loop();
  void write_now(Batch& batch);
  // Until the writer left its loop, at most `deadline` (told to stop first).
  bool wait_gone(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds deadline) {
    stop = true;
    cv.notify_all();
    return cv.wait_for(lock, deadline, [&] { return gone; });
  }

  const RecordingLimits limits;
  // Under mu: the queue and the writer's state.
  std::mutex mu;
  std::condition_variable cv;  // a batch queued, one written, the writer told to stop, the writer gone
  std::deque<Batch> queue;
  size_t queued_events = 0;               // the batch being written included
  bool busy = false;                      // the writer holds a batch it took off the queue
  bool stop = false;                      // the writer leaves once the queue is empty
  bool gone = false;                      // it left
  bool closed = false;                    // close() ran: later writes are not written
  bool finishing = false;                 // the run is ending: no wait for room
  bool cut = false;                       // a batch found no room in time: it and every later one are left out
  uint64_t left_calls = 0, left_ops = 0;  // what was left out

  // The writer's while it runs; close()'s once it is gone.
  int fd = -1;
  std::string path, tmp, error;
  bool overwrite = false;
  Tables tables;
  size_t stacks_written = 0, nvtx_written = 0;
  size_t marks_queued = 0;  // under mu: the marks given to the writer in steps (written before the tail)
  std::string text;         // a batch's text, reused from batch to batch
};

RecordingStream::RecordingStream(RecordingLimits limits) : w_(std::make_shared<Writer>(limits)) {}

RecordingStream::~RecordingStream() {
  std::unique_lock lock(w_->mu);
  w_->closed = true;
  if (w_->fd < 0) return;
  // Not closed (a test, or a stream given up on): what was queued is written, and the temporary file stays. A writer
  // that does not finish in time keeps the file (and its own share of the state) to itself.
  if (w_->wait_gone(lock, w_->limits.drain_wait)) ::close(w_->fd);
}

bool RecordingStream::open(const std::string& path, bool overwrite, const RunInfo& run,
                           const std::vector<std::string>& api_names, Tables tables, std::string& error) {
  Writer& w = *w_;
  std::lock_guard lock(w.mu);
  w.path = path;
  if (!path.empty() && path[0] != '/') {  // moved into place at exit: the program may have changed directory
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) w.path = std::string(cwd) + "/" + path;
  }
  w.fd = open_beside(w.path, w.tmp, error);
  if (w.fd < 0) return false;
  w.overwrite = overwrite;
  w.tables = std::move(tables);
  std::ostringstream head;
  write_recording_head(head, run, api_names);
  if (!write_all(w.fd, head.str(), w.path, w.error)) {
    error = w.error;
    ::close(w.fd);
    w.fd = -1;
    unlink(w.tmp.c_str());
    return false;
  }
  // Detached: it holds its share of the state, and is waited for with a deadline (close(), the destructor).
  with_signals_blocked([&] { std::thread([w = w_] { w->loop(); }).detach(); });
  return true;
}

void RecordingStream::write(const CallVector& calls, const OpVector& ops) { take(CallVector(calls), OpVector(ops)); }

void RecordingStream::take(CallVector&& calls, OpVector&& ops) {
  Writer& w = *w_;
  const size_t events = calls.size() + ops.size();
  std::unique_lock lock(w.mu);
  if (w.closed || w.fd < 0) return;
  if (!w.cut && !w.finishing) {
    w.cut = !w.cv.wait_for(lock, w.limits.room_wait, [&] {
      return w.closed || w.finishing || w.queued_events == 0 || w.queued_events + events <= w.limits.max_queued_events;
    });
    if (w.closed) return;
  }
  if (w.cut) {  // the recording stops where it is: a hole would change what the rest of it means
    w.left_calls += calls.size();
    w.left_ops += ops.size();
    return;
  }
  w.queued_events += events;
  Writer::Batch batch;
  batch.calls = std::move(calls);
  batch.ops = std::move(ops);
  w.queue.push_back(std::move(batch));
  w.cv.notify_all();
}

void RecordingStream::advanced(uint64_t horizon_ns, uint64_t margin_ns, const std::vector<Mark>& marks) {
  Writer& w = *w_;
  std::lock_guard lock(w.mu);
  // No wait for room: a step is one line, and the events before it are queued already. After a cut, none: the
  // recording ends where its events do.
  if (w.closed || w.fd < 0 || w.cut) return;
  Writer::Batch step;
  step.step = true;
  step.horizon_ns = horizon_ns;
  step.margin_ns = margin_ns;
  if (marks.size() > w.marks_queued)
    step.marks.assign(marks.begin() + static_cast<std::ptrdiff_t>(w.marks_queued), marks.end());
  w.marks_queued = std::max(w.marks_queued, marks.size());
  w.queue.push_back(std::move(step));
  w.cv.notify_all();
}

void RecordingStream::finishing() {
  std::lock_guard lock(w_->mu);
  w_->finishing = true;
  w_->cv.notify_all();
}

void RecordingStream::Writer::loop() {
  std::unique_lock lock(mu);
  for (;;) {
    cv.wait(lock, [&] { return stop || !queue.empty(); });
    if (queue.empty()) break;  // told to stop, and nothing left
    Batch batch = std::move(queue.front());
    queue.pop_front();
    busy = true;
    lock.unlock();
    const size_t events = batch.calls.size() + batch.ops.size();
    write_now(batch);
    batch = {};  // freed before the next wait
    lock.lock();
    queued_events -= events;
    busy = false;
    cv.notify_all();
  }
  gone = true;
  cv.notify_all();
}

void RecordingStream::Writer::write_now(Batch& batch) {
  if (fd < 0 || !error.empty()) return;
  text.clear();               // its capacity kept: the next batch's text is about as long
  std::vector<Stack> stacks;  // only those not written yet: the whole table each chunk cost O(stacks) a chunk
  std::vector<NvtxRange> ranges;
  if (tables) tables(stacks_written, nvtx_written, stacks, ranges);
  append_stacks(text, stacks, 0, stacks_written);
  append_nvtx_ranges(text, ranges, 0, nvtx_written);
  stacks_written += stacks.size();
  nvtx_written += ranges.size();
  for (ApiCall& c : batch.calls) {  // ids not written yet would not read back
    if (c.stack > stacks_written) c.stack = 0;
    if (c.nvtx_range > nvtx_written) c.nvtx_range = 0;
  }
  append_events(text, batch.calls, batch.ops);
  if (batch.step) append_step(text, batch.marks, 0, batch.horizon_ns, batch.margin_ns);
  write_all(fd, text, path, error);
}

bool RecordingStream::flush(std::chrono::milliseconds deadline) {
  std::unique_lock lock(w_->mu);
  return w_->cv.wait_for(lock, deadline, [&] { return w_->queue.empty() && !w_->busy; });
}

bool RecordingStream::close(const EventLog& log, std::string& error, std::string& warning) {
  Writer& w = *w_;
  std::unique_lock lock(w.mu);
  if (w.fd < 0 || w.closed) {
    error = "the recording '" + w.path + "' was not open";
    return false;
  }
  w.closed = true;
  if (!w.wait_gone(lock, w.limits.drain_wait)) {
    // The writer is stuck (a file system that does not answer): it keeps the file, which stays temporary.
    error = "the recording '" + w.path + "' was not finished: its last events were not written within " +
            std::to_string(w.limits.drain_wait.count()) + " ms; " + w.tmp + " holds what was";
    return false;
  }
  if (w.error.empty()) {
    EventLog cut;  // the tail of a recording cut short: what it left out counted
    if (w.cut) {
      copy_run_and_tables(log, cut);
      cut.carried = log.carried;
      cut.carried.calls += w.left_calls;
      cut.run.unanalyzed_calls += w.left_calls;
      cut.carried.ops += w.left_ops;
      cut.run.complete = false;
      warning = "the recording '" + w.path + "' stops before the run's end: its events came faster than they could " +
                "be written (" + std::to_string(w.limits.max_queued_events) + " waiting for more than " +
                std::to_string(w.limits.room_wait.count()) + " ms); " + std::to_string(w.left_calls) + " calls and " +
                std::to_string(w.left_ops) + " GPU operations after that are counted in it, not recorded";
    }
    std::ostringstream o;
    write_recording_tail(o, w.cut ? cut : log, w.stacks_written, w.nvtx_written, w.marks_queued);
    write_all(w.fd, o.str(), w.path, w.error);
  }
  ::close(w.fd);
  w.fd = -1;
  if (!w.error.empty()) {
    error = w.error;
    unlink(w.tmp.c_str());
    return false;
  }
  return move_into_place(w.tmp, w.path, w.overwrite, error);
}

}  // namespace asynccheck::report
