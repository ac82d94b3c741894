#include "interpose/capture.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "cupti/activity.h"
#include "cupti/subscriber.h"
#include "interpose/host_ranges.h"
#include "interpose/lock_within.h"
#include "interpose/python_frames.h"
#include "interpose/stacks.h"
#include "rules/predict.h"

namespace asynccheck::capture {
namespace {

using rules::ApiKind;
using rules::CopyDirection;
using rules::MemoryKind;

// One per application thread that made a watched call. Registered once, never freed: the calls of a thread that
// has exited are still reported.
struct ThreadLog {
  std::mutex mu;  // taken by its own thread on each append (uncontended) and by finish()
  std::vector<ApiCall> calls;
  uint32_t thread = 0;
  // Watched calls this thread has entered and not yet left, for finish(): a call in flight when another thread
  // ends the process is missing from the report. Written only by its own thread (a store, no read-modify-write).
  std::atomic<uint32_t> open{0};
};

struct Global {
  std::atomic<bool> active{false};
  std::atomic<bool> finished{false};
  void (*on_first_call)() = nullptr;
  std::once_flag first_call;
  uint64_t threshold_ns = 100'000;
  std::mutex mu;  // guards the fields below; taken once per thread and for marks (rare)
  std::vector<ThreadLog*> threads;
  std::vector<Mark> marks;
  HostRanges ranges;
};

Global& global() {
  static Global* g = new Global;  // never destroyed: CUPTI may call back while the process exits
  return *g;
}

thread_local ThreadLog* t_log = nullptr;
thread_local int t_runtime_depth = 0;        // > 0 while inside a watched runtime call
thread_local uint64_t t_nested_driver_corr = 0;
thread_local bool t_busy = false;             // reentrancy guard: our own work never re-enters the capture
thread_local uint32_t t_open = 0;             // this thread's ThreadLog::open

ThreadLog& thread_log() {
  if (t_log == nullptr) {
    auto* log = new ThreadLog;
    log->calls.reserve(4096);
    Global& g = global();
    std::lock_guard lock(g.mu);
    log->thread = static_cast<uint32_t>(g.threads.size());
    g.threads.push_back(log);
    t_log = log;
  }
  return *t_log;
}

struct Guard {
  bool entered;
  Guard() : entered(!t_busy) { t_busy = true; }
  ~Guard() {
    if (entered) t_busy = false;
  }
};

uint16_t api_index(const cupti::ApiSpec& spec) {
  return static_cast<uint16_t>(&spec - cupti::watched_apis().data());
}

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

// Enqueues on the legacy default stream: the rule engine may predict serialization for these.
bool on_legacy_stream(const ApiCall& c) {
  if (c.call.per_thread_variant) return false;
  return rules::uses_implicit_default_stream(c.call) || ((c.stream == 0 || c.stream == 1) &&
                        (c.call.api == ApiKind::KernelLaunch || c.call.api == ApiKind::Copy ||
                         c.call.api == ApiKind::Memset || c.call.api == ApiKind::GraphLaunch));
}

void on_enter(const cupti::ApiSpec& spec, const void*, uint64_t* slot, uint32_t correlation_id) {
  if (!global().active.load(std::memory_order_relaxed)) return;
  if (spec.domain == Domain::Driver && t_runtime_depth > 0) {
    // The runtime calling the driver for a watched runtime call: remember its id (activity records may carry
    // it), do not count the call twice.
    if (t_nested_driver_corr == 0) t_nested_driver_corr = correlation_id;
    return;
  }
  if (spec.domain == Domain::Runtime) {
    ++t_runtime_depth;
    t_nested_driver_corr = 0;
  }
  *slot = cupti::timestamp();
  thread_log().open.store(++t_open, std::memory_order_relaxed);
}

void on_exit(const cupti::ApiSpec& spec, const void* params, uint64_t* slot, uint32_t correlation_id, int32_t result) {
  Global& g = global();
  if (spec.domain == Domain::Driver && t_runtime_depth > 0) return;
  if (spec.domain == Domain::Runtime && t_runtime_depth > 0) --t_runtime_depth;
  if (*slot == 0) return;  // its entry was not recorded
  // Counted down even after finish(): the count is what says whether a call was in flight.
  if (t_log != nullptr && t_open > 0) t_log->open.store(--t_open, std::memory_order_relaxed);
  if (!g.active.load(std::memory_order_relaxed)) return;
  const uint64_t end = cupti::timestamp();
  Guard guard;
  if (!guard.entered) return;
  ApiCall c;
  c.correlation_id = correlation_id;
  c.driver_correlation_id = spec.domain == Domain::Runtime ? t_nested_driver_corr : 0;
  c.start_ns = *slot;
  c.end_ns = end;
  c.cbid = spec.cbid;
  c.domain = spec.domain;
  c.name = api_index(spec);
  c.result = result;
  cupti::decode_enter(spec, params, c);
  if (result == 0) cupti::decode_exit(spec, params, c);  // out-parameters are only valid on success
  if (c.call.api == ApiKind::Copy) classify_copy(c, g.ranges);
  if (c.call.api == ApiKind::Memset) {
    MemoryKind k = g.ranges.find(c.dst_ptr);
    c.call.dst = k == MemoryKind::Unknown ? MemoryKind::Device : k;
  }
  update_ranges(c, g.ranges);
  if (g.on_first_call) std::call_once(g.first_call, g.on_first_call);
  // Stacks only for the calls that matter: they held the host, or the rules say they may block or serialize.
  const bool matters = end - c.start_ns >= g.threshold_ns || rules::predict(c.call).may_hold_host() || on_legacy_stream(c);
  if (matters) c.stack = capture_stack(3);  // skip capture_stack, on_exit and CUPTI's dispatcher
  ThreadLog& log = thread_log();
  c.thread = log.thread;
  std::lock_guard lock(log.mu);
  log.calls.push_back(c);
}

void on_mark(MarkKind kind) {
  Global& g = global();
  if (!g.active.load(std::memory_order_relaxed)) return;
  Mark m{kind, cupti::timestamp(), t_log ? t_log->thread : 0};
  std::lock_guard lock(g.mu);
  g.marks.push_back(m);
}

}  // namespace

bool start(uint64_t threshold_ns, size_t activity_buffer_bytes, void (*on_first_call)(), std::string& error) {
  Global& g = global();
  g.threshold_ns = threshold_ns;
  g.on_first_call = on_first_call;
  // Look libpython up now rather than in the first callback that captures a stack: dlsym takes the loader's lock.
  (void)python_available();
  cupti::Sink sink{on_enter, on_exit, on_mark};
  if (!cupti::subscribe(sink, error)) return false;
  if (!cupti::enable_activity(activity_buffer_bytes, error)) return false;
  g.active.store(true, std::memory_order_release);
  return true;
}

// Safe while other threads still make CUDA calls (exit() from one thread while others run, or a signal's report):
// new calls are ignored from the moment `active` drops (a call already past that check may still append to its
// own thread's log, which is never freed, and is simply not in this report). Every lock is taken with a deadline
// (lock_within.h): what a stopped thread holds is left out and the report says it is incomplete.
EventLog finish() {
  Global& g = global();
  EventLog log;
  if (g.finished.exchange(true)) return log;  // callable once
  g.active.store(false, std::memory_order_release);
  cupti::stop_callbacks();
  cupti::flush_activity();
  log.ops = cupti::take_ops();
  log.run.gpu = cupti::device_name();
  log.run.dropped_records = cupti::dropped_records();
  bool complete = true;
  std::vector<ThreadLog*> threads;
  if (lock_within(g.mu)) {
    std::lock_guard lock(g.mu, std::adopt_lock);
    threads = g.threads;
    log.marks = g.marks;
  } else {
    complete = false;
  }
  for (ThreadLog* t : threads) {
    if (t->open.load(std::memory_order_relaxed) > 0) complete = false;  // a call in flight: not in the report
    if (!lock_within(t->mu)) {
      complete = false;
      continue;
    }
    std::lock_guard tl(t->mu, std::adopt_lock);
    log.calls.insert(log.calls.end(), t->calls.begin(), t->calls.end());
  }
  std::stable_sort(log.calls.begin(), log.calls.end(),
                   [](const ApiCall& a, const ApiCall& b) { return a.start_ns < b.start_ns; });
  std::sort(log.ops.begin(), log.ops.end(), [](const GpuOp& a, const GpuOp& b) { return a.start_ns < b.start_ns; });
  for (const cupti::ApiSpec& spec : cupti::watched_apis()) log.api_names.emplace_back(spec.name);
  log.stacks = interned_stacks();
  for (ApiCall& c : log.calls) {
    // The stacks could not be read (interned_stacks): keep the call, without a dangling stack id.
    if (c.stack > log.stacks.size()) {
      c.stack = 0;
      complete = false;
    }
  }
  log.modules = loaded_modules();
  log.run.threshold_ns = g.threshold_ns;
  log.run.complete = complete;
  return log;
}

}  // namespace asynccheck::capture
