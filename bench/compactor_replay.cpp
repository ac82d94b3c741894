// The capture's streaming analysis (analysis/streaming.h, fed by analysis/feed.h) replayed on a recorded
// stream, without a GPU: how long its rounds take per second of the program's time, how many calls a second it
// judges, how many events it keeps, and the memory it adds, at any number of calls. The recording's steady part (its middle 80%) is repeated, shifted in time and correlation
// ids, as a program looping on the same work would produce it.
//
// usage: compactor_replay RECORDING CALLS [MARGIN_MS] [CHUNK_CALLS]
//   RECORDING: an uncompacted recording (asynccheck --compact=0 --save=FILE -- ./bench/api_calls 1000000 1)
//   MARGIN_MS: 10 by default, as in the capture; CHUNK_CALLS: 16384 by default, as compact_round and the chunks
// Rounds happen as in the capture: when CHUNK_CALLS calls are pending or 100 ms of the recording's time have
// passed; a round adds the calls that ended (thread after thread, as the capture takes the threads' buffers) and the
// GPU work that ended before it (what CUPTI's flush delivers, in the recording's order),
// then analyzes chunk by chunk to that horizon. Prints one RESULT line; with COMPACTOR_REPLAY_KEPT=1 in the
// environment also what the result kept at the end, by API and whether it has a stack, and its first calls and operations;
// with COMPACTOR_REPLAY_FLUSH_PERIOD_MS=N, rounds as with the capture's flush_period option (below); with
// COMPACTOR_REPLAY_TRACE=FILE, the Chrome trace drawn as the analysis lets the events go (report/trace_stream.h) and
// written to FILE at the end, as `--trace` does: its memory is in the RESULT's, and a TRACE line says its size and
// how long writing the JSON took (write_s: what the program's exit waits for). With COMPACTOR_REPLAY_LIVE=1, memory
// as in the capture: the rounds on a thread of their own (its own malloc arena), no malloc_trim after them, the last
// round's calls left to finish() on the main thread, as the exiting thread does, and rss_added_kb the process' peak
// resident memory (VmHWM, reset once the recording is read) over its start.
// COMPACTOR_REPLAY_ROUND_CALLS=N: rounds of N calls (the capture's compact_round), chunks of CHUNK_CALLS.
// COMPACTOR_REPLAY_WRITE=1: only times writing the recording's events as a recording's text (append_events, what a
// live run's --save writes for every chunk, report/recording_stream.h) into one reused string, and prints a WRITE line
// with the median of 5 (CALLS is not used).
#include <malloc.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <fstream>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "analysis/feed.h"
#include "bench/proc_memory.h"
#include "analysis/pace.h"
#include "analysis/recording.h"
#include "report/trace_stream.h"

using namespace asynccheck;
using asynccheck::bench::rss_kb;
using asynccheck::bench::status_kb;

namespace {

// This thread's CPU time: on a machine shared with other work, wall time says as much about the neighbours.
double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: compactor_replay RECORDING CALLS [MARGIN_MS] [CHUNK_CALLS]\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  EventLog log;
  std::string error;
  if (!in) {
    std::fprintf(stderr, "compactor_replay: cannot open %s\n", argv[1]);
    return 1;
  }
  if (!read_recording(in, log, error)) {
    std::fprintf(stderr, "compactor_replay: cannot read %s: %s\n", argv[1], error.c_str());
    return 1;
  }
  if (std::getenv("COMPACTOR_REPLAY_WRITE") != nullptr) {
    std::string text;
    std::vector<double> took;
    for (int i = 0; i < 5; ++i) {
      text.clear();
      const auto t0 = std::chrono::steady_clock::now();
      append_events(text, log.calls, log.ops);
      took.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(took.begin(), took.end());
    std::printf("WRITE calls=%zu ops=%zu bytes=%zu median_s=%.4f calls_per_s=%.0f\n", log.calls.size(), log.ops.size(),
                text.size(), took[2], static_cast<double>(log.calls.size()) / took[2]);
    return 0;
  }
  char* rest = nullptr;
  const uint64_t want = std::strtoull(argv[2], &rest, 10);
  if (want == 0 || *rest != '\0') {
    std::fprintf(stderr, "compactor_replay: CALLS must be a positive whole number, got '%s'\n", argv[2]);
    return 2;
  }
  StreamingOptions options;
  options.analysis.threshold_ns = log.run.threshold_ns;
  options.margin_ns = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 10) * 1'000'000;
  const size_t chunk = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 16 * 1024;
  const char* round_env = std::getenv("COMPACTOR_REPLAY_ROUND_CALLS");
  const size_t round_calls = round_env ? std::strtoull(round_env, nullptr, 10) : chunk;

  // The steady part: calls [lo, hi), ops that start in their span.
  const size_t lo = log.calls.size() / 10, hi = log.calls.size() * 9 / 10;
  if (hi <= lo + 1) {
    std::fprintf(stderr, "compactor_replay: %s has too few calls\n", argv[1]);
    return 1;
  }
  const uint64_t t_lo = log.calls[lo].start_ns, t_hi = log.calls[hi].start_ns, span = t_hi - t_lo;
  uint64_t max_corr = 0;
  for (const ApiCall& c : log.calls) max_corr = std::max({max_corr, c.correlation_id, c.driver_correlation_id});
  // The steady part's work is the work its calls enqueued (by correlation id, not by time: work starts after its
  // call, so a cut by time would leave calls at the seams waiting for work that never comes), and the records of
  // no call of ours that fall in its span.
  std::unordered_set<uint64_t> period_ids, head_ids;
  for (size_t i = 0; i < log.calls.size(); ++i) {
    auto& ids = i >= lo && i < hi ? period_ids : head_ids;
    ids.insert(log.calls[i].correlation_id);
    if (log.calls[i].driver_correlation_id != 0) ids.insert(log.calls[i].driver_correlation_id);
  }
  OpVector period_ops;
  for (const GpuOp& op : log.ops) {
    const bool ours = period_ids.count(op.correlation_id) != 0;
    const bool nobodys = !ours && head_ids.count(op.correlation_id) == 0 && op.start_ns >= t_lo && op.start_ns < t_hi;
    if (ours || nobodys) period_ops.push_back(op);
  }

  // The stream, generated lazily: the head of the recording, then copies of the steady part.
  CallVector head(log.calls.begin(), log.calls.begin() + static_cast<std::ptrdiff_t>(lo));
  OpVector head_ops;
  for (const GpuOp& op : log.ops) {
    if (head_ids.count(op.correlation_id) != 0) head_ops.push_back(op);
  }
  CallVector pending_calls;
  OpVector pending_ops;  // generated, not yet ended before a round
  const bool live = std::getenv("COMPACTOR_REPLAY_LIVE") != nullptr;
  AnalysisFeed compactor(options, log.run.env, chunk);
  const char* trace_path = std::getenv("COMPACTOR_REPLAY_TRACE");
  report::TraceStream trace;
  if (trace_path) {
    if (!trace.open(std::string(trace_path) + ".events", log.api_names, error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    compactor.set_sink(&trace);
    compactor.set_release_sink(&trace);
  }
  compactor.add(std::move(head), {}, log.marks, 0, 0);
  pending_ops = std::move(head_ops);
  if (live) std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM from here on
  const long base_kb = rss_kb();
  long peak_kb = base_kb;
  uint64_t generated = lo, copy = 0, ops_generated = 0;
  size_t since_round = 0;
  uint64_t last_round_t = log.calls[lo].start_ns;
  double compact_s = 0, compact_cpu_s = 0;
  // COMPACTOR_REPLAY_FLUSH_PERIOD_MS=N: the capture's flush_period (force_flush, capture.cpp's round): a forced flush
  // when the records horizon lagged N ms or the backlog held half of compact_backlog (262,144). Rounds in between
  // deliver the records of work that ended before the previous round (an ordinary flush hands over complete buffers:
  // a round late here), and compact up to the records horizon (AnalysisFeed::records_before), leaving the rest in the
  // backlog unless it is past that half.
  const char* period_env = std::getenv("COMPACTOR_REPLAY_FLUSH_PERIOD_MS");
  const uint64_t period_ns = period_env ? std::strtoull(period_env, nullptr, 10) * 1'000'000 : 0;
  constexpr size_t kMaxBacklog = 262'144;
  const size_t behind = behind_at(period_ns, chunk, kMaxBacklog);
  uint64_t last_forced = 0, records = 0;
  size_t forced_rounds = 0;
  OpVector held;  // ended, not yet delivered
  auto round = [&](uint64_t now) {
    CallVector calls;
    if (live) {  // as the capture takes them: a copy, the thread's buffer kept for the next round
      calls.assign(pending_calls.begin(), pending_calls.end());
      pending_calls.clear();
    } else {
      std::swap(calls, pending_calls);
    }
    // As the capture takes them: each thread's buffer after the other's (each in the order its calls returned).
    std::stable_sort(calls.begin(), calls.end(),
                     [](const ApiCall& a, const ApiCall& b) { return a.thread < b.thread; });
    OpVector ops;
    const size_t backlog = compactor.backlog_size();
    const bool forced = force_flush(now, records, period_ns, backlog, kMaxBacklog,
                                    backlog >= kMaxBacklog / 2 ? compactor.backlog_front_ns() : 0) ||
                        now == UINT64_MAX / 2;
    if (!forced) std::swap(ops, held);  // what ended before the previous round
    auto ended =
        std::stable_partition(pending_ops.begin(), pending_ops.end(), [&](const GpuOp& op) { return op.end_ns < now; });
    held.insert(held.end(), pending_ops.begin(), ended);
    pending_ops.erase(pending_ops.begin(), ended);
    if (forced) {
      std::swap(ops, held);
      last_forced = now;
      ++forced_rounds;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = thread_cpu_s();
    compactor.add(std::move(calls), std::move(ops), log.marks, last_forced, now);
    records = period_ns == 0 ? now : compactor.records_before(now, last_forced);
    const uint64_t horizon = std::min(now, records);
    while (compactor.has_backlog()) {
      if (period_ns != 0 && compactor.backlog_front_ns() >= horizon && compactor.backlog_size() <= behind) break;
      compactor.compact_chunk(horizon);
    }
    if (!live) malloc_trim(0);
    compact_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    compact_cpu_s += thread_cpu_s() - cpu0;
    peak_kb = std::max(peak_kb, rss_kb());
    since_round = 0;
    last_round_t = now;
  };
  auto generate = [&] {
    while (generated < want) {
      const uint64_t shift = copy * span;
      const uint64_t corr_shift = copy * (max_corr + 1);
      for (const GpuOp& op : period_ops) {
        GpuOp o = op;
        o.start_ns += shift;
        o.end_ns += shift;
        if (o.correlation_id != 0) o.correlation_id += corr_shift;
        pending_ops.push_back(o);
        ++ops_generated;
      }
      for (size_t i = lo; i < hi && generated < want; ++i, ++generated) {
        ApiCall c = log.calls[i];
        c.start_ns += shift;
        c.end_ns += shift;
        c.correlation_id += corr_shift;
        if (c.driver_correlation_id != 0) c.driver_correlation_id += corr_shift;
        if (since_round >= round_calls || c.start_ns - last_round_t >= 100'000'000) round(c.start_ns);
        pending_calls.push_back(c);
        ++since_round;
      }
      ++copy;
    }
  };
  StreamingAnalysis::Result result;
  if (live) {
    std::thread(generate).join();
    pending_ops.insert(pending_ops.end(), held.begin(), held.end());
    result = compactor.finish(std::move(pending_calls), std::move(pending_ops), log.marks);
    peak_kb = std::max(peak_kb, status_kb("VmHWM:"));
  } else {
    generate();
    round(UINT64_MAX / 2);
    result = compactor.finish({}, {}, {});
  }
  const EventLog& end = result.log;
  if (trace_path) {  // as the library's end does (core.cpp: emit_report)
    copy_run_and_tables(log, result.log);
    const report::ReportData data = report::make_report(result.log, result.analysis);
    const auto written_from = std::chrono::steady_clock::now();
    if (!report::write_streamed_trace(trace, trace_path, true, 0, -1, data, error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    const double write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - written_from).count();
    peak_kb = std::max(peak_kb, rss_kb());
    std::ifstream written(trace_path, std::ios::binary | std::ios::ate);
    std::printf("TRACE bytes=%lld write_s=%.3f\n", static_cast<long long>(written.tellg()), write_s);
  }
  if (std::getenv("COMPACTOR_REPLAY_KEPT") != nullptr) {  // what stays, by API, role and whether it has a stack
    std::map<std::string, size_t> kinds;
    for (const ApiCall& c : end.calls) {
      kinds[log.api_names[c.name] + (c.stack ? " stack" : "")]++;
    }
    for (const auto& [k, n] : kinds) std::fprintf(stderr, "kept %zu %s\n", n, k.c_str());
    const uint64_t t0 = end.calls.empty() ? 0 : end.calls.front().start_ns;
    for (size_t i = 0; i < end.ops.size() && i < 12; ++i) {
      const GpuOp& op = end.ops[i];
      std::fprintf(stderr, "op %zu kind %d stream %u start %.6f s end %.6f s corr %llu\n", i, static_cast<int>(op.kind),
                   op.stream_id, static_cast<double>(op.start_ns - t0) / 1e9, static_cast<double>(op.end_ns - t0) / 1e9,
                   static_cast<unsigned long long>(op.correlation_id));
    }
    for (size_t i = 0; i < end.calls.size() && i < 12; ++i) {
      const ApiCall& c = end.calls[i];
      std::fprintf(stderr, "call %zu %s start %.6f s end %.6f corr %llu\n", i, log.api_names[c.name].c_str(),
                   static_cast<double>(c.start_ns - t0) / 1e9, static_cast<double>(c.end_ns - t0) / 1e9,
                   static_cast<unsigned long long>(c.correlation_id));
    }
  }
  const FeedStats& st = compactor.stats();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double program_s = static_cast<double>(copy * span) / 1e9;
  std::printf(
      "RESULT calls=%llu ops=%llu program_s=%.2f compact_s=%.2f compact_per_program_s=%.3f rounds=%llu "
      "chunks=%llu forced_rounds=%zu calls_per_s=%.0f peak_window_calls=%llu kept_calls=%zu kept_ops=%zu "
      "carried_sites=%zu rss_added_kb=%ld maxrss_kb=%ld compact_cpu_s=%.2f cpu_calls_per_s=%.0f\n",
      static_cast<unsigned long long>(generated), static_cast<unsigned long long>(ops_generated), program_s, compact_s,
      compact_s / program_s, static_cast<unsigned long long>(st.rounds), static_cast<unsigned long long>(st.chunks),
      forced_rounds, static_cast<double>(generated) / compact_s, static_cast<unsigned long long>(st.peak_window_calls),
      end.calls.size(), end.ops.size(), end.carried.findings.size(), peak_kb - base_kb, ru.ru_maxrss, compact_cpu_s,
      static_cast<double>(generated) / compact_cpu_s);
  return 0;
}
