// The capture's side in the program's threads: CUPTI's callbacks, which turn each watched call into an ApiCall in
// the thread's own log (on_enter, on_exit), and the capture's lifecycle (start, finish). What the analysis threads do
// with the logs is in analysis_thread.cpp.
#include "interpose/capture.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analysis/feed.h"
#include "analysis/monitoring.h"
#include "common/thread_local_address.h"
#include "cupti/activity.h"
#include "cupti/subscriber.h"
#include "interpose/capture_state.h"
#include "interpose/lock_within.h"
#include "interpose/modules.h"
#include "interpose/nvtx_ranges.h"
#include "interpose/python_frames.h"
#include "interpose/stacks.h"
#include "rules/predict.h"

namespace asynccheck::capture {

Global& global() {
  static Global* g = new Global;  // never destroyed: CUPTI may call back while the process exits
  return *g;
}

namespace {

using rules::ApiKind;
using rules::CopyDirection;
using rules::MemoryKind;

// The calling thread's part of the capture, in one thread-local: the library's TLS is reached through
// __tls_get_addr (the dynamic model of a shared library, which an injected library needs), one call per variable
// a callback touches, on every watched call.
struct ThreadState {
  ThreadLog* log = nullptr;
  int runtime_depth = 0;  // > 0 while inside a watched runtime call
  uint64_t nested_driver_corr = 0;
  bool busy = false;  // reentrancy guard: our own work never re-enters the capture
  uint32_t open = 0;  // this thread's ThreadLog::open
  // Kernels this thread launched while its buffer was full (Global::thread_backlog): a launch of one of them is
  // sheddable, the first is not. Filled only past the limit, so an ordinary run never pays for it.
  std::unordered_set<uint64_t>* launched_past_cap = nullptr;
};
thread_local ThreadState t_state;

// This thread's state, its address taken once per callback (common/thread_local_address.h).
ThreadState& this_thread_state() { return thread_local_address(t_state); }

ThreadLog& thread_log(ThreadState& ts) {
  if (ts.log == nullptr) {
    // Owned until registered: short of memory, what throws here is caught where CUPTI called us (the call is
    // counted there as missing) and the next call tries again.
    auto log = std::make_unique<ThreadLog>();
    log->calls.reserve(kThreadBufferCalls);
    Global& g = global();
    std::lock_guard lock(g.mu);
    log->thread = static_cast<uint32_t>(g.threads.size());
    g.threads.push_back(log.get());
    g.thread_count.store(g.threads.size(), std::memory_order_relaxed);
    ts.log = log.release();
  }
  return *ts.log;
}

struct Guard {
  ThreadState& ts;
  bool entered;
  explicit Guard(ThreadState& state) : ts(state), entered(!state.busy) { state.busy = true; }
  ~Guard() {
    if (entered) ts.busy = false;
  }
};

uint16_t api_index(const cupti::ApiSpec& spec) { return static_cast<uint16_t>(&spec - cupti::watched_apis().data()); }

// Which side of a copy the program says is on the host, from the direction it asked for.
void classify_copy(ApiCall& c, const HostRanges& ranges) {
  const CopyDirection dir = c.call.direction;
  const bool src_host = dir == CopyDirection::HostToDevice || dir == CopyDirection::HostToHost;
  const bool dst_host = dir == CopyDirection::DeviceToHost || dir == CopyDirection::HostToHost;
  const bool src_dev = dir == CopyDirection::DeviceToHost || dir == CopyDirection::DeviceToDevice;
  const bool dst_dev = dir == CopyDirection::HostToDevice || dir == CopyDirection::DeviceToDevice;
  auto kind = [&](uint64_t ptr, bool host, bool dev) {
    MemoryKind k = ranges.find(ptr);
    if (k != MemoryKind::Unknown || ptr == 0) return k;
    if (dev) return MemoryKind::Device;
    // Host side, or cudaMemcpyDefault on a pointer no allocation of ours covers: ordinary (pageable) memory.
    // Device memory we did not see allocated (VMM) is corrected by the copy's activity record.
    (void)host;
    return MemoryKind::Pageable;
  };
  c.call.src = kind(c.src_ptr, src_host, src_dev);
  c.call.dst = kind(c.dst_ptr, dst_host, dst_dev);
}

void update_ranges(const ApiCall& c, HostRanges& ranges) {
  if (c.result != 0) return;
  const uint64_t ptr = c.handle;
  switch (c.call.api) {
    case ApiKind::DeviceAlloc:
    case ApiKind::StreamOrderedAlloc: ranges.add(ptr, c.call.bytes, MemoryKind::Device); break;
    case ApiKind::ManagedAlloc: ranges.add(ptr, c.call.bytes, MemoryKind::Managed); break;
    case ApiKind::PinnedAlloc:
    case ApiKind::HostRegister: ranges.add(ptr, c.call.bytes, MemoryKind::Pinned); break;
    case ApiKind::Free:
    case ApiKind::FreeHost:
    case ApiKind::HostUnregister:
    case ApiKind::StreamOrderedFree: ranges.remove(ptr); break;
    default: break;
  }
}

void on_enter(const cupti::ApiSpec& spec, const void*, uint64_t* slot, uint32_t correlation_id) {
  if (!global().active.load(std::memory_order_relaxed)) return;
  ThreadState& ts = this_thread_state();
  if (spec.domain == Domain::Driver && ts.runtime_depth > 0) {
    // The runtime calling the driver for a watched runtime call: remember its id (activity records may carry
    // it), do not count the call twice.
    if (ts.nested_driver_corr == 0) ts.nested_driver_corr = correlation_id;
    return;
  }
  if (spec.domain == Domain::Runtime) {
    ++ts.runtime_depth;
    ts.nested_driver_corr = 0;
  }
  // Registered first: a call of a new thread must bound the analysis' horizon from its first timestamp on.
  ThreadLog& log = thread_log(ts);
  *slot = cupti::timestamp();
  if (ts.open == 0) log.open_since.store(*slot, std::memory_order_relaxed);
  log.open.store(++ts.open, std::memory_order_relaxed);
}

// Clears the thread's open_since when its outermost call is done, after the call is in its log (or dropped).
struct OpenSinceReset {
  ThreadState& ts;
  ~OpenSinceReset() {
    if (ts.log != nullptr && ts.open == 0) ts.log->open_since.store(0, std::memory_order_release);
  }
};

void on_exit(const cupti::ApiSpec& spec, const void* params, uint64_t* slot, uint32_t correlation_id, int32_t result) {
  Global& g = global();
  ThreadState& ts = this_thread_state();
  if (spec.domain == Domain::Driver && ts.runtime_depth > 0) return;
  if (spec.domain == Domain::Runtime && ts.runtime_depth > 0) --ts.runtime_depth;
  if (*slot == 0) return;  // its entry was not recorded
  OpenSinceReset reset_open_since{ts};
  // Counted down even after finish(): the count is what says whether a call was in flight.
  if (ts.log != nullptr && ts.open > 0) ts.log->open.store(--ts.open, std::memory_order_relaxed);
  if (!g.active.load(std::memory_order_relaxed)) return;
  const uint64_t end = cupti::timestamp();
  Guard guard(ts);
  if (!guard.entered) return;
  ApiCall c;
  c.correlation_id = correlation_id;
  c.driver_correlation_id = spec.domain == Domain::Runtime ? ts.nested_driver_corr : 0;
  c.start_ns = *slot;
  c.end_ns = end;
  c.cbid = spec.cbid;
  c.domain = spec.domain;
  c.name = api_index(spec);
  c.result = result;
  c.nvtx_range = nvtx_ranges::current();
  cupti::decode_enter(spec, params, c);
  if (result == 0) cupti::decode_exit(spec, params, c);  // out-parameters are only valid on success
  if (c.call.api == ApiKind::Copy) classify_copy(c, g.ranges);
  if (c.call.api == ApiKind::Memset) {
    MemoryKind k = g.ranges.find(c.dst_ptr);
    c.call.dst = k == MemoryKind::Unknown ? MemoryKind::Device : k;
  }
  update_ranges(c, g.ranges);
  g.streams.observe(c);
  if (g.on_first_call && !g.first_call_done.load(std::memory_order_acquire)) {
    std::call_once(g.first_call, [&g] {
      g.on_first_call();
      g.first_call_done.store(true, std::memory_order_release);
    });
  }
  // Stacks only for the calls that matter: they held the host, or the rules say they may block, or they may
  // serialize with another blocking stream's work (blocking_streams.h: not while no such stream had work).
  const bool matters = end - c.start_ns >= g.threshold_ns || rules::predict(c.call).may_hold_host() ||
                       (on_legacy_stream(c) && g.streams.others_possible());
  if (matters) {
    c.stack = capture_stack(3);  // skip capture_stack, on_exit and CUPTI's dispatcher
    g.stacks_walked.fetch_add(1, std::memory_order_relaxed);
  }
  ThreadLog& log = thread_log(ts);
  c.thread = log.thread;
  std::lock_guard lock(log.mu);
  // The thread's share of the backlog limit: half of it over the threads, at least a round.
  const size_t share =
      g.thread_backlog == 0
          ? 0
          : std::max(g.round_calls,
                     g.thread_backlog / (2 * std::max<size_t>(1, g.thread_count.load(std::memory_order_relaxed))));
  if (share != 0 && log.calls.size() >= share) {
    bool launched_before = false;
    if (c.call.api == ApiKind::KernelLaunch) {
      // Never freed, like ThreadLog: a callback may still come while the thread or the process exits.
      if (ts.launched_past_cap == nullptr) ts.launched_past_cap = new std::unordered_set<uint64_t>;
      launched_before = !ts.launched_past_cap->insert(c.function).second;
    }
    switch (at_thread(c, log.calls.size(), share, launched_before, g.threshold_ns)) {
      case AtThread::Keep: break;
      case AtThread::Lose: ++log.lost; [[fallthrough]];
      case AtThread::Shed: ++log.shed; return;
    }
  }
  log.calls.push_back(c);  // short of memory, it throws; caught where CUPTI called us (cupti/subscriber.cpp)
  log.pending.store(log.calls.size(), std::memory_order_relaxed);
}

void on_mark(MarkKind kind) {
  Global& g = global();
  if (!g.active.load(std::memory_order_relaxed)) return;
  Mark m{kind, cupti::timestamp(), t_state.log ? t_state.log->thread : 0};
  std::lock_guard lock(g.mu);
  g.marks.push_back(m);
}

}  // namespace

bool start(const Options& options, std::string& error, std::string& warning) {
  if (options.round_calls == 0 || options.activity_buffer_bytes == 0) {  // capture.h: the options' own, unset
    error = "the capture's options were not set (compact_round " + std::to_string(options.round_calls) +
            ", activity_buffer_kb " + std::to_string(options.activity_buffer_bytes / 1024) + ")";
    return false;
  }
  Global& g = global();
  g.streaming = options.streaming;
  g.env = options.env;
  g.round_calls = options.round_calls;
  g.max_backlog = options.max_backlog;
  g.flush_period_ns = options.flush_period_ns;
  g.thread_backlog = options.streaming ? options.max_backlog : 0;
  g.threshold_ns = options.analysis.threshold_ns;
  g.on_first_call = options.on_first_call;
  // Look libpython up now rather than in the first callback that captures a stack: dlsym takes the loader's lock.
  (void)python_available();
  cupti::Sink sink{on_enter, on_exit, on_mark, nvtx_ranges::on_callback};
  if (!cupti::subscribe(sink, error)) return false;
  if (!cupti::enable_activity(options.activity_buffer_bytes, options.device_buffers, options.device_buffer_bytes, error,
                              warning)) {
    return false;
  }
  g.active.store(true, std::memory_order_release);
  g.analysis = options.analysis;
  if (g.streaming) {
    StreamingOptions streaming;
    streaming.analysis = options.analysis;
    streaming.margin_ns = kMarginNs;
    {
      std::lock_guard lock(g.central_mu);
      g.feed = std::make_unique<AnalysisFeed>(streaming, g.env, kChunkCalls, g.max_backlog);
      g.feed->set_sink(options.sink);
      g.feed->set_release_sink(options.release_sink);
    }
    start_analysis_thread();
  }
  return true;
}

// Safe while other threads still make CUDA calls (exit() from one thread while others run, or a signal's report):
// new calls are ignored from the moment `active` drops (a call already past that check may still append to its
// own thread's log, which is never freed, and is simply not in this report). Every lock is taken with a deadline
// (lock_within.h): what a stopped thread holds is left out and the report says it is incomplete.
StreamingAnalysis::Result finish() {
  Global& g = global();
  StreamingAnalysis::Result r;
  if (g.finished.exchange(true)) return r;  // callable once
  g.active.store(false, std::memory_order_release);
  bool complete = true;
  // The analysis the analysis threads fed so far goes on with the rest; if they cannot be stopped in time, its part
  // is left out.
  AnalysisFeed* feed = nullptr;  // stays in g: stats() reads it after the report
  if (stop_analysis_thread(std::chrono::milliseconds(2000)) && lock_within(g.central_mu)) {
    std::lock_guard lock(g.central_mu, std::adopt_lock);
    feed = g.feed.get();
  } else if (g.streaming) {
    complete = false;
  }
  // Whether monitoring stood to the end (cupti/health.h): read before our own stop_callbacks() turns them off.
  cupti::Health health;
  cupti::check_subscription(health);
  cupti::stop_callbacks();
  cupti::flush_activity();
  cupti::flush_health(health);
  OpVector ops = cupti::take_ops();
  std::vector<ThreadLog*> threads;
  std::vector<Mark> marks;
  if (lock_within(g.mu)) {
    std::lock_guard lock(g.mu, std::adopt_lock);
    threads = g.threads;
    marks = g.marks;
  } else {
    complete = false;
  }
  CallVector calls;
  uint64_t shed = 0;
  for (ThreadLog* t : threads) {
    if (t->open.load(std::memory_order_relaxed) > 0) complete = false;  // a call in flight: not in the report
    if (!lock_within(t->mu)) {
      complete = false;
      continue;
    }
    std::lock_guard tl(t->mu, std::adopt_lock);
    calls.insert(calls.end(), t->calls.begin(), t->calls.end());
    if (feed) feed->count_shed(t->shed, t->lost);
    shed += feed ? 0 : t->shed;
    if (t->lost != 0) complete = false;
  }
  if (feed) {
    r = feed->finish(std::move(calls), std::move(ops), std::move(marks));
    complete = complete && r.log.run.complete;
  } else {
    // Every event kept (a trace or a recording asks for them): the same analysis, in one step.
    EventLog& log = r.log;
    log.calls = std::move(calls);
    log.ops = std::move(ops);
    log.marks = std::move(marks);
    std::stable_sort(log.calls.begin(), log.calls.end(), InLogOrder{});
    std::stable_sort(log.ops.begin(), log.ops.end(), InLogOrder{});
    log.carried.calls = shed;
    log.run.unanalyzed_calls = shed;
    log.run.env = g.env;
    r.analysis = analyze(log, g.analysis);
  }
  EventLog& log = r.log;
  log.run.gpu = cupti::device_name();
  log.run.dropped_records = cupti::dropped_records();
  log.api_names.clear();
  for (const cupti::ApiSpec& spec : cupti::watched_apis()) log.api_names.emplace_back(spec.name);
  log.stacks = interned_stacks();
  for (ApiCall& c : log.calls) {
    // The stacks could not be read (interned_stacks): keep the call, without a dangling stack id.
    if (c.stack > log.stacks.size()) {
      c.stack = 0;
      complete = false;
    }
  }
  for (CarriedSite& s : log.carried.findings) {
    if (s.stack > log.stacks.size()) s.stack = 0;
  }
  log.modules = loaded_modules();
  log.run.threshold_ns = g.analysis.threshold_ns;
  log.run.cost_threshold_ns = g.analysis.cost_threshold_ns;
  // What our callbacks could not keep (core.cpp says it).
  if (cupti::failed_callbacks().any()) complete = false;
  log.run.complete = complete;
  // The findings made before it stopped stay; the state says the rest of the run was not watched.
  if (const std::string why = cupti::stopped_reason(health); !why.empty())
    log.run.monitoring = std::string(kMonitoringStoppedPrefix) + why;
  return r;
}

}  // namespace asynccheck::capture
