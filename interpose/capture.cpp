#include "interpose/capture.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "cupti/activity.h"
#include "cupti/subscriber.h"
#include "interpose/host_ranges.h"
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
};

struct Global {
  std::atomic<bool> active{false};
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
}

void on_exit(const cupti::ApiSpec& spec, const void* params, uint64_t* slot, uint32_t correlation_id, int32_t result) {
  Global& g = global();
  if (spec.domain == Domain::Driver && t_runtime_depth > 0) return;
  if (spec.domain == Domain::Runtime && t_runtime_depth > 0) --t_runtime_depth;
  if (!g.active.load(std::memory_order_relaxed) || *slot == 0) return;
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
  cupti::Sink sink{on_enter, on_exit, on_mark};
  if (!cupti::subscribe(sink, error)) return false;
  if (!cupti::enable_activity(activity_buffer_bytes, error)) return false;
  g.active.store(true, std::memory_order_release);
  return true;
}

EventLog finish() {
  Global& g = global();
  EventLog log;
  g.active.store(false, std::memory_order_release);
  cupti::stop_callbacks();
  cupti::flush_activity();
  log.ops = cupti::take_ops();
  log.run.gpu = cupti::device_name();
  log.run.dropped_records = cupti::dropped_records();
  {
    std::lock_guard lock(g.mu);
    for (ThreadLog* t : g.threads) {
      std::lock_guard tl(t->mu);
      log.calls.insert(log.calls.end(), t->calls.begin(), t->calls.end());
    }
    log.marks = g.marks;
  }
  std::stable_sort(log.calls.begin(), log.calls.end(),
                   [](const ApiCall& a, const ApiCall& b) { return a.start_ns < b.start_ns; });
  std::sort(log.ops.begin(), log.ops.end(), [](const GpuOp& a, const GpuOp& b) { return a.start_ns < b.start_ns; });
  for (const cupti::ApiSpec& spec : cupti::watched_apis()) log.api_names.emplace_back(spec.name);
  log.stacks = interned_stacks();
  log.modules = loaded_modules();
  log.run.threshold_ns = g.threshold_ns;
  return log;
}

}  // namespace asynccheck::capture
