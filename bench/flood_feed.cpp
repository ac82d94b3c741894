// A flood of calls from many threads through the capture's analysis pipeline (analysis/feed.h), without a GPU: what
// the analysis threads add to a process' memory while several threads launch flat out, and whether they keep up, on
// any machine. `api_calls N 8` on a GPU is the figure that counts (docs/performance.md); this is what a change to
// how events are stored is tried on first, in as many runs as it takes.
//
// usage: flood_feed CALLS_PER_THREAD THREADS [CALLS_PER_S [EVENT_CACHE_KB [RECORD_LAG_MS]]]
//   Each program thread makes the cycle of bench/api_calls (a launch of one kernel, a 256 B pinned copy, an event
//   record, a stream query, on a non-blocking stream of its own) and a stream synchronize every 256 calls, as
//   ApiCalls appended to a buffer of its own under its lock (past its share of the backlog limit, shed or lost:
//   feed.h, at_thread), its buffer swapped for the one spare by the collecting thread, as the capture's threads do
//   (interpose/capture.cpp, capture_state.h). The calls come at CALLS_PER_S in all (1M by
//   default, an 8-thread api_calls' pace on an H100) in bursts of a millisecond's worth, the calls' times spread over
//   it, so that the program's threads take little of the machine's CPU: the two analysis threads need it.
//   The GPU work runs a few microseconds after its call, one operation at a time per stream, and an ordinary flush
//   delivers its record RECORD_LAG_MS (5 by default) after it ended (CUPTI's buffers, handed over once complete;
//   CUPTI sometimes hands them over 40-60 ms late in a flood, and the calls waiting for them are held), a forced one at
//   once; flushes are forced when the capture forces them (flush_period's default).
//   The collecting and the analyzing thread run the capture's loops (analysis/feed_threads.h), its round taken as
//   interpose/analysis_thread.cpp takes one, from these threads and this GPU.
// FLOOD_FEED_TRACE=DIR in the environment: the analysis also draws the Chrome trace as `--trace` does
//   (report/trace_stream.h, its events into a temporary file in DIR), to measure what drawing costs the analysis thread
//   (chunks_s) and whether the flood then sheds; the final trace is not written, and every call is labelled as the
//   first API (the calls have no names of their own here).
// Prints one RESULT line: the program's seconds and the analysis' (chunks_s, and adding_s for the rounds), the calls
// shed, the backlog's and the window's peaks, rss_added_kb (the process' peak resident memory, VmHWM, over what it
// was as the threads started) and, sampled every 5 ms, where the memory was at its largest: malloc's arenas in use
// and free, malloc's own mappings (over what they were at the start), the event memory's mappings and its cache
// (analysis/event_memory.h); then an EVENT_MEMORY line: its mappings made and blocks reused over the run.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/feed.h"
#include "bench/proc_memory.h"
#include "analysis/feed_threads.h"
#include "analysis/pace.h"
#include "options/options.h"
#include "analysis/event_memory.h"
#include "report/trace_stream.h"

using namespace asynccheck;
using asynccheck::bench::rss_kb;
using asynccheck::bench::status_kb;

namespace {

uint64_t g_record_lag_ns = 5'000'000;  // RECORD_LAG_MS
// The capture's defaults (options.def): compact_round, compact_backlog, flush_period (with it, the records are
// delivered as they complete), the threshold.
const size_t kRoundCalls = Options{}.compact_round;
const size_t kMaxBacklog = Options{}.compact_backlog;
const uint64_t kFlushPeriodNs = Options{}.flush_period;
const uint64_t kThresholdNs = AnalysisOptions{}.threshold_ns;

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// One program thread's buffer, as interpose/capture_state.h's ThreadLog.
struct ThreadLog {
  std::mutex mu;
  decltype(EventLog::calls) calls;
  std::atomic<size_t> pending{0};
  std::atomic<uint64_t> open_since{0};  // the start of the burst being appended (its calls are in no buffer yet)
  uint64_t shed = 0, lost = 0;          // past the thread's share of the backlog limit (feed.h: at_thread)
};

// GPU work made by the program's threads, delivered g_record_lag_ns after it ended.
struct Gpu {
  std::mutex mu;
  std::deque<GpuOp> made;  // by end, nearly (each thread's in order)
  // The records of the work that ended before `until`.
  decltype(EventLog::ops) take(uint64_t until) {
    decltype(EventLog::ops) out;
    std::lock_guard lock(mu);
    std::sort(made.begin(), made.end(), [](const GpuOp& a, const GpuOp& b) { return a.end_ns < b.end_ns; });
    while (!made.empty() && made.front().end_ns <= until) {
      out.push_back(made.front());
      made.pop_front();
    }
    return out;
  }
};

std::atomic<uint64_t> g_correlation{1};

// Where the memory is at the run's peak: sampled every 5 ms (resident, malloc's arenas in use and free, malloc's own
// mappings), the sample of the largest resident size kept.
struct Peak {
  long rss_kb = 0;
  size_t arena_used = 0, arena_free = 0, mapped = 0;
  uint64_t events_mapped = 0, events_cached = 0;  // event_memory.h: its mappings' sizes, and what its cache holds
};
void sample_loop(std::atomic<bool>& stop, Peak& peak) {
  while (!stop.load()) {
    const long rss = rss_kb();
    if (rss > peak.rss_kb) {
      const struct mallinfo2 m = mallinfo2();
      peak = {rss, m.uordblks, m.fordblks, m.hblkhd, 0, 0};
      const event_memory::Stats e = event_memory::stats();
      peak.events_mapped = e.mapped_bytes;
      peak.events_cached = e.cached_bytes;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

ApiCall make_call(rules::ApiKind api, uint32_t thread, uint64_t stream, uint64_t start, uint64_t end) {
  ApiCall c;
  c.correlation_id = g_correlation.fetch_add(1, std::memory_order_relaxed);
  c.start_ns = start;
  c.end_ns = end;
  c.thread = thread;
  c.call.api = api;
  c.call.stream = rules::StreamKind::Unknown;
  c.stream = stream;
  return c;
}

void program_thread(uint32_t t, uint32_t threads, uint64_t calls, double per_s, ThreadLog& log, Gpu& gpu) {
  const size_t share = std::max(kRoundCalls, kMaxBacklog / (2 * threads));  // interpose/capture.cpp
  bool launched_past_cap = false;
  const uint64_t stream = 0x1000 + t;
  const uint32_t stream_id = 100 + t;
  uint64_t gpu_free = 0;  // when the stream's last op ends
  uint64_t done = 0;
  const auto burst = std::chrono::milliseconds(1);
  const auto per_burst = static_cast<uint64_t>(per_s / 1000.0);
  auto next = std::chrono::steady_clock::now();
  std::vector<ApiCall> made;
  std::vector<GpuOp> ops;
  while (done < calls) {
    next += burst;
    std::this_thread::sleep_until(next);
    const uint64_t n = std::min<uint64_t>(std::max<uint64_t>(per_burst, 1), calls - done);
    const uint64_t end = now_ns(), begin = end - 1'000'000;
    log.open_since.store(begin, std::memory_order_release);
    made.clear();
    ops.clear();
    for (uint64_t i = 0; i < n; ++i, ++done) {
      const uint64_t start = begin + i * 1'000'000 / n, stop = start + 1'000'000 / n / 2;
      const uint64_t kind = done % 4;
      if (done % 256 == 255) {  // the stream synchronize: it returns once the stream's work ended
        const uint64_t until = std::max(stop, gpu_free);
        made.push_back(make_call(rules::ApiKind::StreamSynchronize, t, stream, start, until));
        GpuOp sync;
        sync.kind = GpuOpKind::Sync;
        sync.stream_id = stream_id;
        sync.correlation_id = made.back().correlation_id;
        sync.start_ns = start;
        sync.end_ns = until;
        ops.push_back(sync);
        continue;
      }
      const rules::ApiKind api = kind == 0   ? rules::ApiKind::KernelLaunch
                                 : kind == 1 ? rules::ApiKind::Copy
                                 : kind == 2 ? rules::ApiKind::EventRecord
                                             : rules::ApiKind::StreamQuery;
      ApiCall c = make_call(api, t, stream, start, stop);
      if (api == rules::ApiKind::KernelLaunch) c.function = 0x4000;
      if (api == rules::ApiKind::Copy) {
        c.call.async_form = true;
        c.call.direction = rules::CopyDirection::HostToDevice;
        c.call.bytes = 256;
        c.call.src = rules::MemoryKind::Pinned;
        c.call.dst = rules::MemoryKind::Device;
      }
      if (api == rules::ApiKind::KernelLaunch || api == rules::ApiKind::Copy) {
        GpuOp op;
        op.kind = api == rules::ApiKind::KernelLaunch ? GpuOpKind::Kernel : GpuOpKind::Memcpy;
        op.copy_kind = api == rules::ApiKind::Copy ? 1 : 0;
        op.src_kind = api == rules::ApiKind::Copy ? 2 : 0;  // pinned
        op.dst_kind = api == rules::ApiKind::Copy ? 3 : 0;  // device
        op.bytes = c.call.bytes;
        op.stream_id = stream_id;
        op.correlation_id = c.correlation_id;
        op.start_ns = std::max(stop + 3'000, gpu_free);
        op.end_ns = op.start_ns + 1'500;
        gpu_free = op.end_ns;
        ops.push_back(op);
      }
      made.push_back(c);
    }
    {
      // As the capture appends each call: past the thread's share of the backlog limit, shed or lost (at_thread).
      std::lock_guard lock(log.mu);
      for (const ApiCall& c : made) {
        // The capture remembers the launches it saw past the limit: the first one past it is kept.
        const bool launched_before = c.call.api == rules::ApiKind::KernelLaunch && log.calls.size() >= share &&
                                     std::exchange(launched_past_cap, true);
        switch (at_thread(c, log.calls.size(), share, launched_before, kThresholdNs)) {
          case AtThread::Keep: log.calls.push_back(c); break;
          case AtThread::Lose: ++log.lost; [[fallthrough]];
          case AtThread::Shed: ++log.shed; break;
        }
      }
      log.pending.store(log.calls.size(), std::memory_order_relaxed);
      log.open_since.store(0, std::memory_order_release);
    }
    std::lock_guard lock(gpu.mu);
    gpu.made.insert(gpu.made.end(), ops.begin(), ops.end());
  }
}

struct Shared {
  std::vector<std::unique_ptr<ThreadLog>> logs;
  Gpu gpu;
  AnalysisFeed* feed = nullptr;
  FeedThreads loops;
  uint64_t last_forced_ns = 0, records_ns = 0;  // the collecting thread's, as the capture's Global
  decltype(EventLog::calls) spare;              // likewise
};

size_t pending(Shared& s) {
  size_t n = 0;
  for (auto& l : s.logs) n += l->pending.load(std::memory_order_relaxed);
  return n;
}

// interpose/analysis_thread.cpp's take_from_threads, without CUPTI: returns the round's horizon. An ordinary flush
// delivers the records of work that ended g_record_lag_ns ago, a forced one (force_flush: analysis/pace.h) every record
// of work that ended.
uint64_t take_round(Shared& s) {
  const uint64_t now = now_ns();
  const size_t backlog = s.feed->backlog_size();
  const uint64_t front = backlog >= kMaxBacklog / 2 ? s.feed->backlog_front_ns() : 0;
  const bool forced = force_flush(now, s.records_ns, kFlushPeriodNs, backlog, kMaxBacklog, front);
  if (forced) s.last_forced_ns = now;
  decltype(EventLog::ops) ops = s.gpu.take(forced ? now : now - g_record_lag_ns);
  decltype(EventLog::calls) calls = round_for(s.logs);
  uint64_t horizon = now, shed = 0, lost = 0;
  for (auto& l : s.logs) {
    decltype(EventLog::calls) taken;
    ready_spare(s.spare, l->pending.load(std::memory_order_relaxed), kRoundCalls);
    {
      std::lock_guard lock(l->mu);
      swap_in_spare(l->calls, s.spare, taken);
      l->pending.store(0, std::memory_order_relaxed);
      shed += std::exchange(l->shed, 0);
      lost += std::exchange(l->lost, 0);
      const uint64_t since = l->open_since.load(std::memory_order_acquire);
      if (since != 0 && since < horizon) horizon = since;
    }
    return_taken(taken, s.spare, calls, kRoundCalls);
  }
  s.feed->add(std::move(calls), std::move(ops), {}, s.last_forced_ns, horizon);
  s.feed->count_shed(shed, lost);
  s.records_ns = s.feed->records_before(now, s.last_forced_ns);
  return std::min(horizon, s.records_ns);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: flood_feed CALLS_PER_THREAD THREADS [CALLS_PER_S [EVENT_CACHE_KB [RECORD_LAG_MS]]]\n");
    return 2;
  }
  const uint64_t per_thread = std::strtoull(argv[1], nullptr, 10);
  const uint32_t threads = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  const double per_s = argc > 3 ? std::strtod(argv[3], nullptr) : 1e6;
  if (argc > 4) event_memory::set_cache_limit(std::strtoull(argv[4], nullptr, 10) * 1024);  // the event_cache_kb option
  if (argc > 5) {
    char* end = nullptr;
    const unsigned long long lag_ms = std::strtoull(argv[5], &end, 10);
    if (end == argv[5] || *end != '\0' || lag_ms > 60'000) {
      std::fprintf(stderr, "flood_feed: RECORD_LAG_MS must be a whole number of milliseconds, 0 to 60000, not '%s'\n",
                   argv[5]);
      return 2;
    }
    g_record_lag_ns = lag_ms * 1'000'000;
  }
  if (per_thread == 0 || threads == 0 || per_s <= 0) {
    std::fprintf(stderr, "flood_feed: CALLS_PER_THREAD, THREADS and CALLS_PER_S must be positive\n");
    return 2;
  }
  StreamingOptions options;
  options.margin_ns = kMarginNs;
  AnalysisFeed feed(options, rules::Environment{}, kChunkCalls, kMaxBacklog);
  // FLOOD_FEED_TRACE (above): drawn as the run goes, never written whole.
  report::TraceStream trace;
  if (const char* dir = std::getenv("FLOOD_FEED_TRACE")) {
    std::string error;
    if (!trace.open(std::string(dir) + "/flood_feed.trace.events", {"cudaLaunchKernel"}, error)) {
      std::fprintf(stderr, "flood_feed: FLOOD_FEED_TRACE: %s\n", error.c_str());
      return 2;
    }
    feed.set_sink(&trace);
    feed.set_release_sink(&trace);
  }
  Shared s;
  s.feed = &feed;
  for (uint32_t t = 0; t < threads; ++t) s.logs.push_back(std::make_unique<ThreadLog>());
  const long rss0 = status_kb("VmRSS:");
  const struct mallinfo2 m0 = mallinfo2();
  Peak peak;
  std::atomic<bool> sampling_stop{false};
  std::thread sampler(sample_loop, std::ref(sampling_stop), std::ref(peak));
  const auto t0 = std::chrono::steady_clock::now();
  s.loops.running = 2;
  std::thread collector([&s] {
    collect_loop(
        s.loops, kPoll, kRoundCalls, [&s] { return pending(s); }, [&s] { return take_round(s); });
  });
  std::thread analyzer([&s, &feed] {
    analyze_loop(s.loops, feed, AnalyzerPace(kFlushPeriodNs, kRoundCalls, kMaxBacklog, PaceClock::now()), kPoll);
  });
  std::vector<std::thread> program;
  for (uint32_t t = 0; t < threads; ++t) {
    program.emplace_back(program_thread, t, threads, per_thread, per_s / threads, std::ref(*s.logs[t]),
                         std::ref(s.gpu));
  }
  for (auto& p : program) p.join();
  const double program_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    std::lock_guard lock(s.loops.mu);
    s.loops.stop = true;
    s.loops.cv.notify_all();
  }
  collector.join();
  analyzer.join();
  // What the threads and the GPU still hold goes to finish(), as the capture's exit does.
  decltype(EventLog::calls) rest;
  uint64_t shed = 0, lost = 0;
  for (auto& l : s.logs) {
    rest.insert(rest.end(), l->calls.begin(), l->calls.end());
    shed += l->shed;
    lost += l->lost;
  }
  feed.count_shed(shed, lost);
  StreamingAnalysis::Result r = feed.finish(std::move(rest), s.gpu.take(UINT64_MAX), {});
  sampling_stop = true;  // sampled through finish(): the end's analysis is part of the peak
  sampler.join();
  const double all_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const FeedStats st = feed.stats();
  std::printf(
      "RESULT threads=%u calls=%llu program_s=%.2f all_s=%.2f chunks_s=%.2f adding_s=%.2f shed=%llu lost=%llu "
      "peak_backlog=%llu "
      "peak_window_calls=%llu peak_window_ops=%llu findings=%zu rss_added_kb=%ld at_peak: rss_added_kb=%ld "
      "arena_used_kb=%ld "
      "arena_free_kb=%ld malloc_mapped_kb=%ld events_mapped_kb=%llu events_cached_kb=%llu\n",
      threads, static_cast<unsigned long long>(per_thread * threads), program_s, all_s,
      static_cast<double>(st.compact_ns) / 1e9, static_cast<double>(st.add_ns) / 1e9,
      static_cast<unsigned long long>(st.shed_calls), static_cast<unsigned long long>(st.lost_calls),
      static_cast<unsigned long long>(st.peak_backlog), static_cast<unsigned long long>(st.peak_window_calls),
      static_cast<unsigned long long>(st.peak_window_ops), r.analysis.findings.size(), status_kb("VmHWM:") - rss0,
      peak.rss_kb - rss0, static_cast<long>(peak.arena_used - m0.uordblks) / 1024,
      static_cast<long>(peak.arena_free - m0.fordblks) / 1024, static_cast<long>(peak.mapped - m0.hblkhd) / 1024,
      static_cast<unsigned long long>(peak.events_mapped / 1024),
      static_cast<unsigned long long>(peak.events_cached / 1024));
  const event_memory::Stats e = event_memory::stats();
  std::printf("EVENT_MEMORY maps=%llu reuses=%llu\n", static_cast<unsigned long long>(e.maps),
              static_cast<unsigned long long>(e.reuses));
  return 0;
}
