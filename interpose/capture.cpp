#include "interpose/capture.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analysis/feed.h"

#include "cupti/activity.h"
#include "cupti/subscriber.h"
#include "interpose/blocking_streams.h"
#include "interpose/host_ranges.h"
#include "interpose/lock_within.h"
#include "interpose/nvtx_ranges.h"
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
  // When the outermost call in flight on this thread started (0: none), for the compaction's horizon: a call
  // still open may need GPU work and calls around its start. Cleared only after the call is in `calls`.
  std::atomic<uint64_t> open_since{0};
  // Calls in `calls` (a relaxed copy of its size), so that the compaction thread sees when enough have piled up
  // to start a round without taking the lock.
  std::atomic<size_t> pending{0};
  // Calls counted instead of appended because `calls` held its share of Global::thread_backlog (the analysis fell
  // behind the program: feed.h, at_thread); `lost` of them were not ordinary (AtThread::Lose). Guarded by mu.
  uint64_t shed = 0;
  uint64_t lost = 0;
  // The buffer `calls` was before the last round took it, emptied, for the next round to swap in. A buffer the
  // thread fills afresh each round costs it a page fault every 28 calls (~35 faults per 1000 calls in
  // bench/api_calls on the H200); this one's pages stay mapped. Only the compaction thread touches it (the swap
  // into `calls` is under mu).
  std::vector<ApiCall> spare;
};

struct Global {
  std::atomic<bool> active{false};
  std::atomic<bool> finished{false};
  void (*on_first_call)() = nullptr;
  std::once_flag first_call;
  uint64_t threshold_ns = 100'000;
  AnalysisOptions analysis;  // what the calls are judged with
  std::mutex mu;             // guards the fields below; taken once per thread and for marks (rare)
  std::vector<ThreadLog*> threads;
  std::vector<Mark> marks;
  HostRanges ranges;
  BlockingStreams streams;
  std::atomic<uint64_t> stacks_walked{0};   // for the `stats` option
  std::atomic<uint64_t> forced_flushes{0};  // likewise: rounds that flushed CUPTI by force (flush_period)
  // Compaction (bounded memory, analysis/feed.h): a thread of ours moves what the application threads
  // captured into the compactor each round, which compacts it a chunk at a time, so that each compaction (and the
  // wait of finish() for one) stays short however much piled up. Off when every event must be kept (trace).
  bool compact = false;
  rules::Environment env;
  size_t round_calls = 16 * 1024;  // compact_round: a round starts when the threads hold this many calls
  size_t max_backlog = 0;          // compact_backlog (0 = no limit)
  // flush_period (0: a forced flush every round) and when the last forced flush was (CUPTI timebase): every record
  // of work finished before it has been taken; between forced flushes the records horizon follows the records that
  // came (AnalysisFeed::records_before). Both the compaction thread's alone.
  uint64_t flush_period_ns = 0;
  uint64_t last_forced_ns = 0;
  uint64_t records_ns = 0;  // the last round's records horizon: a flush is forced when it lags flush_period
  // Threads that outrun the compaction thread stay bounded too: a thread whose buffer holds its share of
  // compact_backlog (half of it over the threads, at least a round) counts its sheddable calls instead of keeping
  // them. 0 = no limit (compaction off, or compact_backlog=0).
  size_t thread_backlog = 0;
  std::atomic<size_t> thread_count{0};
  std::mutex central_mu;               // the compaction thread vs finish(); guards `feed`
  std::unique_ptr<AnalysisFeed> feed;  // made by start() when the analysis streams
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stop = false;     // guarded by stop_mu
  bool stopped = false;  // the compaction thread has left its loop; guarded by stop_mu
};

// A round starts when the threads hold Global::round_calls calls (compact_round, 16k by default), or
// kRoundInterval after the last one, whichever comes first (checked every kPoll). Each compaction moves at most
// kChunkCalls calls into the compacted log. These bound what waits in buffers (the threads' logs, the backlog: ~150
// bytes a call) and a chunk's temporaries (a few hundred bytes per call of the chunk and of what the margin keeps),
// hence the memory added, and a chunk's duration (tens of ms), hence how long finish() waits. Halving them from 32k
// took the peak RSS at 10M calls from 208 to 160-164 MiB on the H200. The interval only matters to programs that
// make fewer calls (a launch-bound PyTorch loop: ~35k a second, a round by count every half second): each round
// starts with a flush of CUPTI's buffers, which the program's thread pays for (measured with a forced flush every
// round, as before flush_period: rounds every 100 ms +38% against the floor's +23% on that loop, every second +33%;
// 5 interleaved rounds each, H200; noisy).
constexpr auto kPoll = std::chrono::milliseconds(10);
constexpr auto kRoundInterval = std::chrono::seconds(1);
constexpr size_t kChunkCalls = 16 * 1024;
// Shorter than streaming.h's default (50 ms): at a launch-bound loop's ~0.4M calls a second, what the margin keeps
// is analyzed again in every chunk. It covers the skew between GPU and CPU timestamps. Records of work no watched
// call enqueued may come later than that (ordinary flushes delivered records up to 278 ms late), and the records
// horizon cannot wait for them (AnalysisFeed::records_before says what that costs); the `stats` option counts records
// that came a round late and how long before the flush that missed them they ended.
constexpr uint64_t kMarginNs = 10'000'000;

Global& global() {
  static Global* g = new Global;  // never destroyed: CUPTI may call back while the process exits
  return *g;
}

thread_local ThreadLog* t_log = nullptr;
thread_local int t_runtime_depth = 0;  // > 0 while inside a watched runtime call
thread_local uint64_t t_nested_driver_corr = 0;
thread_local bool t_busy = false;  // reentrancy guard: our own work never re-enters the capture
thread_local uint32_t t_open = 0;  // this thread's ThreadLog::open
// Kernels this thread launched while its buffer was full (Global::thread_backlog): a launch of one of them is
// sheddable, the first is not. Filled only past the limit, so an ordinary run never pays for it.
thread_local std::unordered_set<uint64_t>* t_launched_past_cap = nullptr;

ThreadLog& thread_log() {
  if (t_log == nullptr) {
    auto* log = new ThreadLog;
    log->calls.reserve(4096);
    Global& g = global();
    std::lock_guard lock(g.mu);
    log->thread = static_cast<uint32_t>(g.threads.size());
    g.threads.push_back(log);
    g.thread_count.store(g.threads.size(), std::memory_order_relaxed);
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
  // Registered first: a call of a new thread must bound the compaction's horizon from its first timestamp on.
  ThreadLog& log = thread_log();
  *slot = cupti::timestamp();
  if (t_open == 0) log.open_since.store(*slot, std::memory_order_relaxed);
  log.open.store(++t_open, std::memory_order_relaxed);
}

// Clears the thread's open_since when its outermost call is done, after the call is in its log (or dropped).
struct OpenSinceReset {
  ~OpenSinceReset() {
    if (t_log != nullptr && t_open == 0) t_log->open_since.store(0, std::memory_order_release);
  }
};

void on_exit(const cupti::ApiSpec& spec, const void* params, uint64_t* slot, uint32_t correlation_id, int32_t result) {
  Global& g = global();
  if (spec.domain == Domain::Driver && t_runtime_depth > 0) return;
  if (spec.domain == Domain::Runtime && t_runtime_depth > 0) --t_runtime_depth;
  if (*slot == 0) return;  // its entry was not recorded
  OpenSinceReset reset_open_since;
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
  if (g.on_first_call) std::call_once(g.first_call, g.on_first_call);
  // Stacks only for the calls that matter: they held the host, or the rules say they may block, or they may
  // serialize with another blocking stream's work (blocking_streams.h: not while no such stream had work).
  const bool matters = end - c.start_ns >= g.threshold_ns || rules::predict(c.call).may_hold_host() ||
                       (on_legacy_stream(c) && g.streams.others_possible());
  if (matters) {
    c.stack = capture_stack(3);  // skip capture_stack, on_exit and CUPTI's dispatcher
    g.stacks_walked.fetch_add(1, std::memory_order_relaxed);
  }
  ThreadLog& log = thread_log();
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
      if (t_launched_past_cap == nullptr) t_launched_past_cap = new std::unordered_set<uint64_t>;
      launched_before = !t_launched_past_cap->insert(c.function).second;
    }
    switch (at_thread(c, log.calls.size(), share, launched_before, g.threshold_ns)) {
      case AtThread::Keep: break;
      case AtThread::Lose: ++log.lost; [[fallthrough]];
      case AtThread::Shed: ++log.shed; return;
    }
  }
  log.calls.push_back(c);
  log.pending.store(log.calls.size(), std::memory_order_relaxed);
}

void on_mark(MarkKind kind) {
  Global& g = global();
  if (!g.active.load(std::memory_order_relaxed)) return;
  Mark m{kind, cupti::timestamp(), t_log ? t_log->thread : 0};
  std::lock_guard lock(g.mu);
  g.marks.push_back(m);
}

// What a round may compact up to: the older of the two.
struct Horizons {
  uint64_t calls;    // now, or the start of the oldest call still in flight on any thread (it is in no buffer yet,
                     // and the calls and GPU work around its start may matter to it)
  uint64_t records;  // every record of work finished before it has been taken: the oldest call still waiting for
                     // its work's record, at least the last forced flush (AnalysisFeed::records_before)
};

// Moves what every thread captured, and the GPU work decoded so far, into the backlog.
Horizons take_from_threads(Global& g) {
  const uint64_t now = cupti::timestamp();
  size_t backlog = 0;
  if (g.flush_period_ns != 0) {
    std::lock_guard lock(g.central_mu);
    backlog = g.feed->backlog_size();
  }
  const bool forced = force_flush(now, g.records_ns, g.flush_period_ns, backlog, g.max_backlog);
  const auto t0 = std::chrono::steady_clock::now();
  cupti::flush_activity(forced);
  if (forced) {
    g.last_forced_ns = now;
    g.forced_flushes.fetch_add(1, std::memory_order_relaxed);
  }
  std::vector<GpuOp> ops = cupti::take_ops();
  const auto t1 = std::chrono::steady_clock::now();
  std::vector<ThreadLog*> threads;
  std::vector<Mark> marks;  // all of them, every round: module loads and context creations explain host time
  {
    std::lock_guard lock(g.mu);
    threads = g.threads;
    marks = g.marks;
  }
  uint64_t horizon = now;
  std::vector<ApiCall> calls;
  uint64_t shed = 0, lost = 0;
  for (ThreadLog* t : threads) {
    // The thread waits on its lock while we hold it: only swap buffers here (an allocation only the first time,
    // so that the thread does not reallocate as it appends); the copy happens outside. A thread stopped while
    // holding its lock (a signal) is skipped, and stays open.
    std::vector<ApiCall> taken;
    const size_t expected = t->pending.load(std::memory_order_relaxed);
    if (t->spare.capacity() == 0) t->spare.reserve(std::max<size_t>(4096, std::min(expected, g.round_calls)));
    if (!lock_within(t->mu, std::chrono::milliseconds(50))) {
      horizon = 0;
      continue;
    }
    {
      std::lock_guard lock(t->mu, std::adopt_lock);
      taken.swap(t->calls);
      t->calls.swap(t->spare);
      shed += std::exchange(t->shed, 0);
      lost += std::exchange(t->lost, 0);
      t->pending.store(0, std::memory_order_relaxed);
      // Read under the lock: a call open now is not in `taken` and bounds the horizon; a call that starts after
      // this read starts after `now`.
      const uint64_t since = t->open_since.load(std::memory_order_acquire);
      if (since != 0 && since < horizon) horizon = since;
    }
    // A copy, not a move, even for one thread: the buffer goes back (a round's copy is a few MB on our thread).
    calls.insert(calls.end(), taken.begin(), taken.end());
    // Back as the next round's buffer, unless it is larger than two rounds (a burst while the analysis was behind)
    // or was mostly empty (a thread that makes few calls, or none any more, e.g. one that exited): then freed, and
    // the next round allocates what that round needs.
    const bool keep = taken.capacity() <= 2 * g.round_calls && taken.size() * 4 >= taken.capacity();
    taken.clear();
    if (keep && t->spare.capacity() < taken.capacity()) t->spare.swap(taken);
  }
  const auto t2 = std::chrono::steady_clock::now();
  std::lock_guard lock(g.central_mu);
  FeedStats& st = g.feed->stats();
  st.flush_ns += static_cast<uint64_t>(std::chrono::nanoseconds(t1 - t0).count());
  st.take_ns += static_cast<uint64_t>(std::chrono::nanoseconds(t2 - t1).count());
  g.feed->add(std::move(calls), std::move(ops), std::move(marks), g.last_forced_ns, horizon);
  g.feed->count_shed(shed, lost);
  g.records_ns = g.feed->records_before(now, g.last_forced_ns);
  return {horizon, g.records_ns};
}

size_t pending_calls(Global& g) {
  size_t n = 0;
  std::lock_guard lock(g.mu);
  for (ThreadLog* t : g.threads) n += t->pending.load(std::memory_order_relaxed);
  return n;
}

void compaction_loop() {
  Global& g = global();
  auto last = std::chrono::steady_clock::now();
  auto last_trim = last;
  bool behind = false;       // the last round stopped because the threads got a round ahead: take again at once
  bool fell_behind = false;  // the backlog grew past two rounds since the last malloc_trim
  // With flush_period the backlog holds what came since the records horizon (at worst since the last forced flush):
  // behind only past the size that forces one.
  const size_t behind_at = asynccheck::behind_at(g.flush_period_ns, g.round_calls, g.max_backlog);
  std::unique_lock lock(g.stop_mu);
  while (!g.stop) {
    if (!behind && g.stop_cv.wait_for(lock, kPoll, [&] { return g.stop; })) break;
    lock.unlock();
    const auto now = std::chrono::steady_clock::now();
    behind = false;
    if (now - last >= kRoundInterval || pending_calls(g) >= g.round_calls) {
      last = now;
      const Horizons h = take_from_threads(g);
      const uint64_t horizon = std::min(h.calls, h.records);
      bool drained = false;
      // Chunk by chunk, looking for stop() in between: finish() waits for one chunk at most.
      for (bool first = true;; first = false) {
        {
          std::lock_guard sl(g.stop_mu);
          if (g.stop) break;
        }
        // The threads got a round ahead: after at least one chunk, take their calls first, so that their buffers
        // stay small (the backlog has a limit, compact_backlog, and sheds past it).
        if (!first && pending_calls(g) >= g.round_calls) {
          behind = true;
          break;
        }
        std::lock_guard cl(g.central_mu);
        if (first && g.feed->backlog_size() > behind_at) fell_behind = true;
        if (!g.feed->has_backlog()) {
          drained = true;
          break;
        }
        // With flush_period, what started after the horizon waits in the backlog, rather than in the compacted
        // log where every chunk would analyze it again until the records it waits for come; drained as far as it
        // can be.
        // Not past behind_at: a horizon held back by a call in flight (or a thread we could not lock) must not
        // make the backlog shed, so the chunks go on into the compacted log, as without a period.
        if (g.flush_period_ns != 0 && g.feed->backlog_front_ns() >= horizon && g.feed->backlog_size() <= behind_at) {
          drained = true;
          break;
        }
        g.feed->compact_chunk(horizon);
      }
      // After a flood, the chunks' temporaries leave holes in the heap that glibc keeps: give them back, at most
      // once a second. Not in a program the compaction keeps up with (its heap stays the same size: RSS at 10M
      // calls measured the same with and without trimming), because malloc_trim locks every arena in turn, the
      // program's own included: a Python thread that allocates waits for it to walk a heap of gigabytes.
      if (fell_behind && now - last_trim >= std::chrono::seconds(1)) {
        malloc_trim(0);
        last_trim = now;
        fell_behind = !drained;
      }
    }
    lock.lock();
  }
  g.stopped = true;
  g.stop_cv.notify_all();
}

// Stops the compaction thread, waiting for a round in progress at most `deadline`. False if it did not stop (it
// may be stuck behind a thread that a signal stopped inside CUDA): `central` must then not be read.
bool stop_compaction(std::chrono::milliseconds deadline) {
  Global& g = global();
  if (!g.compact) return true;
  std::unique_lock lock(g.stop_mu);
  g.stop = true;
  g.stop_cv.notify_all();
  return g.stop_cv.wait_for(lock, deadline, [&] { return g.stopped; });
}

}  // namespace

Stats stats() {
  Global& g = global();
  if (!lock_within(g.central_mu)) return {};
  std::lock_guard lock(g.central_mu, std::adopt_lock);
  return g.feed ? g.feed->stats() : Stats{};
}

uint64_t stacks_walked() { return global().stacks_walked.load(std::memory_order_relaxed); }

uint64_t forced_flushes() { return global().forced_flushes.load(std::memory_order_relaxed); }

bool start(const Options& options, std::string& error, std::string& warning) {
  Global& g = global();
  g.compact = options.streaming;
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
  if (g.compact) {
    StreamingOptions streaming;
    streaming.analysis = options.analysis;
    streaming.margin_ns = kMarginNs;
    {
      std::lock_guard lock(g.central_mu);
      g.feed = std::make_unique<AnalysisFeed>(streaming, g.env, kChunkCalls, g.max_backlog);
      g.feed->set_sink(options.sink);
    }
    // With every signal blocked: the program's signals must reach its own threads, not ours.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    std::thread(compaction_loop).detach();  // detached: finish() waits for it with a deadline, never joins
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
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
  // The analysis the compaction thread fed so far goes on with the rest; if it cannot be stopped in time, its part
  // is left out.
  AnalysisFeed* compactor = nullptr;  // stays in g: stats() reads it after the report
  if (stop_compaction(std::chrono::milliseconds(2000)) && lock_within(g.central_mu)) {
    std::lock_guard lock(g.central_mu, std::adopt_lock);
    compactor = g.feed.get();
  } else if (g.compact) {
    complete = false;
  }
  cupti::stop_callbacks();
  cupti::flush_activity();
  std::vector<GpuOp> ops = cupti::take_ops();
  std::vector<ThreadLog*> threads;
  std::vector<Mark> marks;
  if (lock_within(g.mu)) {
    std::lock_guard lock(g.mu, std::adopt_lock);
    threads = g.threads;
    marks = g.marks;
  } else {
    complete = false;
  }
  std::vector<ApiCall> calls;
  uint64_t shed = 0;
  for (ThreadLog* t : threads) {
    if (t->open.load(std::memory_order_relaxed) > 0) complete = false;  // a call in flight: not in the report
    if (!lock_within(t->mu)) {
      complete = false;
      continue;
    }
    std::lock_guard tl(t->mu, std::adopt_lock);
    calls.insert(calls.end(), t->calls.begin(), t->calls.end());
    if (compactor) compactor->count_shed(t->shed, t->lost);
    shed += compactor ? 0 : t->shed;
    if (t->lost != 0) complete = false;
  }
  if (compactor) {
    r = compactor->finish(std::move(calls), std::move(ops), std::move(marks));
    complete = complete && r.log.run.complete;
  } else {
    // Every event kept (a trace or a recording asks for them): the same analysis, in one step.
    EventLog& log = r.log;
    log.calls = std::move(calls);
    log.ops = std::move(ops);
    log.marks = std::move(marks);
    std::stable_sort(log.calls.begin(), log.calls.end(),
                     [](const ApiCall& a, const ApiCall& b) { return before_in_log(a, b); });
    std::stable_sort(log.ops.begin(), log.ops.end(),
                     [](const GpuOp& a, const GpuOp& b) { return before_in_log(a, b); });
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
  log.run.complete = complete;
  return r;
}

}  // namespace asynccheck::capture
