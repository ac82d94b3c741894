#include "analysis/compact.h"
#include "analysis/median_sketch.h"

#include "analysis/compactor.h"  // on_legacy_stream
#include "analysis/correlation.h"
#include "analysis/stream_index.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace asynccheck {
namespace {

using rules::ApiKind;

constexpr int64_t kNone = -1;
// (stack, api name, rule, NVTX range): the range is in the key so that the report's counts per range stay exact
// when findings are folded away (each range's first finding stays, like each site's).
using SiteKey = std::tuple<uint32_t, uint16_t, rules::RuleId, uint32_t, bool>;  // bool: below the threshold

// When a call's stream work had all ended, as the calls after it show: the work of a call enqueued behind it in
// the same stream started only then (stream order), and a stream or device synchronize begun after it returned
// only then (its synchronization record's end). For graph launches and batch copies (compact(), below).
class StreamDrains {
 public:
  StreamDrains(const EventLog& log, const CorrelationIndex& corr,
               const std::vector<rules::CallDescription>& described) {
    for (size_t j = 0; j < log.calls.size(); ++j) {  // in start order: each list is sorted by start
      const ApiCall& c = log.calls[j];
      const bool device_sync = c.call.api == ApiKind::DeviceSynchronize;
      const bool sync = c.result == 0 && (device_sync || c.call.api == ApiKind::StreamSynchronize);
      for (uint32_t oi : corr.ops_of(j)) {
        const GpuOp& op = log.ops[oi];
        // Untimed records (start and end 0: cupti/activity.cpp) prove nothing: 0 would say the stream drained at once.
        if (op.kind != GpuOpKind::Sync ? op.start_ns == 0 : op.end_ns == 0) continue;
        if (op.kind != GpuOpKind::Sync) {
          add(key(c, described[j].stream, op.context), c.start_ns, op.start_ns);
        } else if (sync) {
          add(device_sync ? Key{0, 0, op.context} : key(c, described[j].stream, op.context), c.start_ns, op.end_ns);
        }
      }
    }
    for (auto& [k, d] : drains_) {
      for (size_t x = d.by.size(); x-- > 1;) d.by[x - 1] = std::min(d.by[x - 1], d.by[x]);
    }
  }

  // Whether the work `c` (in a stream of `kind`, on `context`) enqueued had all ended before `t`.
  bool before(const ApiCall& c, rules::StreamKind kind, uint32_t context, uint64_t t) const {
    for (const Key& k : {key(c, kind, context), Key{0, 0, context}}) {
      auto it = drains_.find(k);
      if (it == drains_.end()) continue;
      const Drains& d = it->second;
      const auto after = std::upper_bound(d.starts.begin(), d.starts.end(), c.end_ns) - d.starts.begin();
      if (static_cast<size_t>(after) < d.by.size() && d.by[static_cast<size_t>(after)] < t) return true;
    }
    return false;
  }

 private:
  // (stream handle, thread, context): one key per legacy stream and per-thread default stream whatever handle named
  // it; handle 0 is the whole context (a device synchronize).
  using Key = std::tuple<uint64_t, uint32_t, uint32_t>;
  static Key key(const ApiCall& c, rules::StreamKind kind, uint32_t context) {
    if (kind == rules::StreamKind::LegacyDefault) return {kStreamLegacyHandle, 0, context};
    if (kind == rules::StreamKind::PerThreadDefault) return {kStreamPerThreadHandle, c.thread, context};
    return {c.stream, 0, context};
  }
  struct Drains {
    std::vector<uint64_t> starts;  // of the calls, sorted
    std::vector<uint64_t> by;      // from each call on, the earliest time one shows the stream drained
  };
  void add(const Key& k, uint64_t start, uint64_t by) {
    Drains& d = drains_[k];
    d.starts.push_back(start);
    d.by.push_back(by);
  }
  std::map<Key, Drains> drains_;
};

bool same_finding(const Finding& a, const Finding& b, const std::vector<int64_t>& call_map,
                  const std::vector<int64_t>& op_map) {
  auto op = [&](int64_t oi) { return oi < 0 ? kNone : op_map[static_cast<size_t>(oi)]; };
  return call_map[a.call] == static_cast<int64_t>(b.call) && a.rule == b.rule && a.predicted == b.predicted &&
         a.verdict == b.verdict && a.level == b.level && a.held_ns == b.held_ns && a.gpu_delay_ns == b.gpu_delay_ns &&
         a.waited_ns == b.waited_ns && a.own_ns == b.own_ns && a.below_threshold == b.below_threshold &&
         a.evidence.by == b.evidence.by && a.evidence.scope == b.evidence.scope && a.evidence.gap_ns == b.evidence.gap_ns &&
         op(a.evidence.op) == b.evidence.op && op(a.evidence.behind_op) == b.evidence.behind_op &&
         op(a.evidence.running_op) == b.evidence.running_op &&
         (a.evidence.op < 0 || op(a.evidence.op) >= 0) && (a.evidence.behind_op < 0 || op(a.evidence.behind_op) >= 0) &&
         (a.evidence.running_op < 0 || op(a.evidence.running_op) >= 0) &&
         a.note == b.note;
}

}  // namespace

bool compact(EventLog& log, uint64_t horizon_ns, const CompactOptions& opt, CompactStats* stats) {
  if (stats) *stats = {log.calls.size(), log.calls.size(), log.ops.size(), log.ops.size()};
  if (horizon_ns <= opt.margin_ns) return false;
  const uint64_t cut = horizon_ns - opt.margin_ns;
  const AnalysisOptions& ao = opt.analysis;
  const Analysis a = analyze(log, ao);
  const size_t n = log.calls.size(), m = log.ops.size();

  // Who enqueued each op, as the analyzer reads it; every op of a call, synchronization records included.
  const CorrelationIndex corr(log.calls, log.ops, /*work_only=*/false);

  // Judged calls: unsettled ones, and the first samples_per_site findings of each key.
  std::vector<char> judged(n, 0), keep_call(n, 0);
  std::optional<StreamDrains> drains;  // only for graph launches and batch copies: most logs have none
  std::vector<char> waiting(n, 0);
  // When the first call in a blocking stream still waiting for a record of its work returned.
  uint64_t oldest_waiting_end = UINT64_MAX;
  for (size_t i = 0; i < n; ++i) {
    const ApiCall& c = log.calls[i];
    // Work it enqueued and whose record has not come (queued behind other work, however long): until it does,
    // its enqueue time and stream are needed to read that record, so the call stays. A captured command enqueued
    // nothing: its work comes with the graph launch's records.
    bool waiting_for_work = expects_work_record(c) && !a.described[i].captured && corr.ops_of(i).empty();
    // A graph launch gets a record per node, a batch copy one per copy, each as its work ends (a forced flush in
    // between, or an ordinary one, hands over some of them): the first to come says nothing of the rest. Until the
    // calls after it show that all its work ended before the cut, a record of it may still come.
    if (gets_several_records(c) && c.result == 0 && c.end_ns < cut && !corr.ops_of(i).empty()) {
      if (!drains) drains.emplace(log, corr, a.described);
      const GpuOp& first = log.ops[corr.ops_of(i).front()];
      waiting_for_work = !drains->before(c, a.described[i].stream, first.context, cut);
    }
    waiting[i] = waiting_for_work;
    // Only work in blocking streams is what a legacy-stream command serializes with (below). Not past
    // kRecordOverdueNs: a record that never comes (lost) would keep every later legacy-stream command forever.
    if (waiting_for_work && blocking_kind(a.described[i].stream) && !on_legacy_stream(c) &&
        c.end_ns + kRecordOverdueNs >= cut) {
      oldest_waiting_end = std::min(oldest_waiting_end, c.end_ns);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const ApiCall& c = log.calls[i];
    bool settled = c.end_ns < cut && !waiting[i];
    // A legacy-stream command's delay out (judge_legacy_stream) reads the blocking-stream work that was enqueued
    // before its own work ended and started when it ended: that work may still be running, its record not come.
    // And whether it serializes at all (blocking_streams_pending, hence its prediction) reads the work enqueued
    // before it started. Settled once its work ended before the cut and no call in a blocking stream that returned
    // before that end waits for a record of its work.
    if (settled && (on_legacy_stream(c) || a.predicted[i].gpu == rules::GpuEffect::SerializesWithBlockingStreams)) {
      const int64_t first = first_work_op(corr.ops_of(i), log.ops);
      if (first >= 0) {
        const GpuOp& own = log.ops[static_cast<size_t>(first)];
        if (own.start_ns != 0) {
          settled = own.end_ns + ao.gpu_gap_ns < cut && oldest_waiting_end >= own.end_ns;
        } else {
          // Untimed (start and end 0): its end is no time. No delay in or out is measured from it, but whether it
          // serializes still reads the blocking-stream work enqueued before it started, and a graph launch's (a
          // batch copy's) later records, timed, would become its first work op (until overdue, as above: lost).
          settled = oldest_waiting_end > c.start_ns &&
                    (!gets_several_records(c) || c.end_ns + kRecordOverdueNs < cut);
        }
      }
    }
    if (!settled && !c.context_only) judged[i] = 1;
  }
  // At least one: a key's first finding is the row's example, and carried counts join that row (aggregate.cpp).
  const size_t samples = std::max<size_t>(1, opt.samples_per_site);
  std::map<SiteKey, size_t> kept_samples;
  auto key_of = [&](const Finding& f) {
    const ApiCall& c = log.calls[f.call];
    return SiteKey{c.stack, c.name, f.rule, c.nvtx_range, f.below_threshold};
  };
  for (const Finding& f : a.findings) {
    size_t& kept = kept_samples[key_of(f)];
    if (judged[f.call]) {
      ++kept;
    } else if (kept < samples) {
      judged[f.call] = 1;
      ++kept;
    }
  }

  // Calls whose state later descriptions read (describe_calls in analyze.cpp).
  for (size_t i : a.capture_state_calls) keep_call[i] = 1;  // capture begin/end, joins, events of a capture
  std::unordered_map<uint64_t, size_t> open_alloc;  // stream-ordered pointer -> the allocation that made it
  std::unordered_map<uint64_t, size_t> last_record;  // event -> its last cudaEventRecord
  for (size_t i = 0; i < n; ++i) {
    const ApiCall& c = log.calls[i];
    const rules::CallDescription& d = a.described[i];
    switch (c.call.api) {
      case ApiKind::StreamCreate:
      case ApiKind::StreamDestroy:
      case ApiKind::EventCreate: keep_call[i] = 1; break;
      case ApiKind::EventRecord: {  // the last record of an event: an event synchronize waits for its stream
        auto [it, fresh] = last_record.try_emplace(c.handle, i);
        if (!fresh) it->second = i;
        break;
      }
      case ApiKind::KernelLaunch:
        if (d.first_launch) keep_call[i] = 1;
        break;
      case ApiKind::StreamOrderedAlloc: {
        auto [it, fresh] = open_alloc.emplace(c.handle, i);
        keep_call[i] = 1;  // until paired with its free below
        if (!fresh) {      // allocated twice without a free in between: keep everything about this pointer
          open_alloc.erase(it);
        }
        break;
      }
      case ApiKind::StreamOrderedFree: {
        auto it = open_alloc.find(c.handle);
        // An allocation and its stream-ordered free with nothing reading the pointer in between (only Free does):
        // the set of stream-ordered pointers is the same without both.
        if (it != open_alloc.end() && c.end_ns < cut && log.calls[it->second].end_ns < cut) {
          keep_call[it->second] = 0;
        } else {
          keep_call[i] = 1;
        }
        if (it != open_alloc.end()) open_alloc.erase(it);
        break;
      }
      case ApiKind::Free:
        if (d.stream_ordered_pointer) {
          keep_call[i] = 1;
          open_alloc.erase(c.handle);  // its allocation stays (kept above)
        }
        break;
      default: break;
    }
  }
  for (const auto& [event, i] : last_record) keep_call[i] = 1;
  for (size_t i = 0; i < n; ++i) {  // the record each judged event synchronize is anchored at
    if (judged[i] && a.event_record[i] >= 0) keep_call[static_cast<size_t>(a.event_record[i])] = 1;
  }

  // GPU operations a judged call (or a call still to come) reads.
  std::vector<char> keep_op(m, 0);
  const StreamIndex streams(log.ops);
  std::vector<size_t> by_end, by_start;  // work ops (not Sync), as the analyzer orders them
  for (size_t oi = 0; oi < m; ++oi) {
    if (log.ops[oi].kind != GpuOpKind::Sync) {
      by_end.push_back(oi);
      by_start.push_back(oi);
    }
  }
  std::stable_sort(by_end.begin(), by_end.end(), [&](size_t x, size_t y) { return log.ops[x].end_ns < log.ops[y].end_ns; });
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](size_t x, size_t y) { return log.ops[x].start_ns < log.ops[y].start_ns; });
  std::vector<char> with_previous(m, 0);  // keep_with_previous already done: windows of judged calls overlap
  auto keep_with_previous = [&](size_t oi) {
    if (with_previous[oi]) return;
    with_previous[oi] = 1;
    keep_op[oi] = 1;
    const int64_t prev = streams.previous(oi);
    if (prev >= 0) keep_op[static_cast<size_t>(prev)] = 1;
  };
  auto keep_ending_within = [&](uint64_t lo, uint64_t hi) {
    auto it = std::lower_bound(by_end.begin(), by_end.end(), lo,
                               [&](size_t oi, uint64_t t) { return log.ops[oi].end_ns < t; });
    for (; it != by_end.end() && log.ops[*it].end_ns <= hi; ++it) keep_op[*it] = 1;
  };
  for (size_t oi = 0; oi < m; ++oi) {
    if (log.ops[oi].end_ns >= cut) keep_with_previous(oi);
  }
  // Per stream, the op(s) ending last: the previous op in stream (held_back, behind_op) of work whose record has not
  // come yet (a call waiting for its work, a graph launch's later nodes, blocking-stream work still running). Work
  // of a watched call stays through blocking_streams_pending (below) when a judged call started while it ran; work
  // of no watched call (unwatched APIs, shed calls) would not. One op per stream.
  for (size_t oi : streams.last_to_end()) keep_op[oi] = 1;
  std::vector<uint64_t> judged_starts;
  for (size_t i = 0; i < n; ++i) {
    if (!judged[i]) continue;
    const ApiCall& c = log.calls[i];
    judged_starts.push_back(c.start_ns);
    for (size_t oi : corr.ops_of(i)) keep_with_previous(oi);
    // attribute(): its own ops (above), and per stream the last op to end while it held the host (or within the
    // skew allowed after its return, gpu_gap_ns) of the work enqueued before it began or by calls we do not watch: its scope is a set of
    // streams, so what it waited for is one of these. Not all of them: a synchronize that waited 100 ms behind a busy
    // GPU would keep a thousand ops and their calls. The work still running when it returned (running_op) is kept
    // below, with blocking_streams_pending's.
    {
      const uint64_t hi = c.end_ns + ao.gpu_gap_ns;
      auto it = std::upper_bound(by_end.begin(), by_end.end(), c.start_ns,
                                 [&](uint64_t t, size_t oi) { return t < log.ops[oi].end_ns; });
      std::unordered_map<uint32_t, uint64_t> last_end;  // per stream
      std::vector<size_t> window;
      // Enqueued by the time its scope counts work: its start, or its event's record (analyze.cpp, scope_of).
      const uint64_t enqueued_by =
          a.event_record[i] >= 0 ? log.calls[static_cast<size_t>(a.event_record[i])].end_ns : c.start_ns;
      for (; it != by_end.end() && log.ops[*it].end_ns <= hi; ++it) {
        const int64_t p = corr.producer(*it);
        if (p >= 0 && log.calls[static_cast<size_t>(p)].end_ns > enqueued_by) continue;
        window.push_back(*it);
        uint64_t& e = last_end[log.ops[*it].stream_id];
        e = std::max(e, log.ops[*it].end_ns);
      }
      for (size_t oi : window) {
        if (log.ops[oi].end_ns == last_end[log.ops[oi].stream_id]) keep_with_previous(oi);
      }
    }
    // judge_legacy_stream(): around its first own work op.
    if (a.predicted[i].gpu != rules::GpuEffect::SerializesWithBlockingStreams) continue;
    const int64_t li = first_work_op(corr.ops_of(i), log.ops);
    if (li < 0) continue;
    const GpuOp& legacy = log.ops[static_cast<size_t>(li)];
    const uint64_t lo = legacy.start_ns > ao.gpu_gap_ns ? legacy.start_ns - ao.gpu_gap_ns : 0;
    keep_ending_within(std::min(lo, c.end_ns), legacy.start_ns);  // delay in, and what held it back
    auto y = std::lower_bound(by_start.begin(), by_start.end(), legacy.end_ns,
                              [&](size_t oi, uint64_t t) { return log.ops[oi].start_ns < t; });
    for (; y != by_start.end() && log.ops[*y].start_ns <= legacy.end_ns + ao.gpu_gap_ns; ++y) keep_with_previous(*y);
  }
  // blocking_streams_pending (mark_pending_blocking_work in analyze.cpp): at a judged call's start, per stream, the
  // latest end of the work enqueued before it. All it reads of a stream is that maximum, so the op holding it is
  // enough: every op in flight was ~1,000 a call when the GPU ran behind (launches blocking on a full queue), each
  // keeping its call too. Per stream and kind of stream (the producer's description), so the maximum over the
  // blocking kinds the analysis reads is kept whatever the others hold.
  std::sort(judged_starts.begin(), judged_starts.end());
  std::vector<std::pair<uint64_t, size_t>> by_enqueue;  // (enqueue time: its producer's return, op)
  for (size_t oi = 0; oi < m; ++oi) {
    const int64_t p = corr.producer(oi);
    if (p >= 0 && log.ops[oi].kind != GpuOpKind::Sync) by_enqueue.push_back({log.calls[static_cast<size_t>(p)].end_ns, oi});
  }
  std::sort(by_enqueue.begin(), by_enqueue.end());
  std::map<std::pair<uint32_t, rules::StreamKind>, size_t> latest;  // (stream, kind) -> the op that ends last so far
  size_t next = 0;
  for (uint64_t start : judged_starts) {
    for (; next < by_enqueue.size() && by_enqueue[next].first <= start; ++next) {
      const size_t oi = by_enqueue[next].second;
      const auto p = static_cast<size_t>(corr.producer(oi));
      auto [it, fresh] = latest.try_emplace({log.ops[oi].stream_id, a.described[p].stream}, oi);
      if (!fresh && log.ops[oi].end_ns > log.ops[it->second].end_ns) it->second = oi;
    }
    for (const auto& [stream, oi] : latest) {
      if (log.ops[oi].end_ns > start) keep_op[oi] = 1;
    }
  }
  // Call sites skip kernel frames by the kernel names seen (report/symbolize.cpp): one op per name is enough.
  std::unordered_set<std::string> kernel_names;
  for (size_t oi = 0; oi < m; ++oi) {
    const GpuOp& op = log.ops[oi];
    if (op.kind == GpuOpKind::Kernel && !op.name.empty() && kernel_names.insert(op.name).second) keep_op[oi] = 1;
  }
  // An op that stays keeps the call that enqueued it: its enqueue time and stream kind are read.
  for (size_t oi = 0; oi < m; ++oi) {
    if (keep_op[oi] && corr.producer(oi) >= 0) keep_call[static_cast<size_t>(corr.producer(oi))] = 1;
  }
  for (size_t i = 0; i < n; ++i) keep_call[i] = keep_call[i] || judged[i];

  // The smaller log.
  EventLog small;
  small.run = log.run;
  small.api_names = log.api_names;
  small.marks = log.marks;
  small.modules = log.modules;
  small.stacks = log.stacks;
  small.symbols = log.symbols;
  small.nvtx_ranges = log.nvtx_ranges;
  small.carried = log.carried;
  std::vector<int64_t> call_map(n, kNone), op_map(m, kNone);
  for (size_t i = 0; i < n; ++i) {
    if (!keep_call[i]) continue;
    call_map[i] = static_cast<int64_t>(small.calls.size());
    small.calls.push_back(log.calls[i]);
    small.calls.back().context_only = !judged[i];
  }
  for (size_t oi = 0; oi < m; ++oi) {
    if (!keep_op[oi]) continue;
    op_map[oi] = static_cast<int64_t>(small.ops.size());
    small.ops.push_back(log.ops[oi]);
  }
  if (small.calls.size() == n && small.ops.size() == m) {
    // Nothing dropped; flags may still change (calls no longer judged), which would only move counts around.
    return false;
  }

  // Check: every judged call is described and judged exactly as before.
  const Analysis b = analyze(small, ao);
  for (size_t i = 0; i < n; ++i) {
    if (judged[i] && !(a.described[i] == b.described[static_cast<size_t>(call_map[i])])) return false;
  }
  size_t fb = 0;
  Carried carried = log.carried;
  std::map<SiteKey, size_t> site_index;
  for (size_t k = 0; k < carried.findings.size(); ++k) {
    const CarriedSite& s = carried.findings[k];
    site_index[{s.stack, s.name, s.rule, s.nvtx_range, s.below > 0}] = k;
  }
  for (const Finding& f : a.findings) {
    if (judged[f.call]) {
      if (fb >= b.findings.size() || !same_finding(f, b.findings[fb], call_map, op_map)) return false;
      ++fb;
      continue;
    }
    const ApiCall& c = log.calls[f.call];
    const SiteKey key = key_of(f);
    auto [it, fresh] = site_index.try_emplace(key, carried.findings.size());
    if (fresh) carried.findings.push_back({c.stack, c.name, f.rule, 0, 0, 0, 0, c.nvtx_range, 0, 0, 0, {}});
    CarriedSite& s = carried.findings[it->second];
    const uint64_t t = f.rule == rules::RuleId::LegacyStreamSerialization ? f.gpu_delay_ns : f.held_ns;
    ++s.count;
    s.total_ns += t;
    s.waited_ns += f.rule == rules::RuleId::LegacyStreamSerialization ? t : f.waited_ns;
    s.own_ns += f.rule == rules::RuleId::LegacyStreamSerialization ? 0 : f.own_ns;
    s.below += f.below_threshold ? 1 : 0;
    ++s.median_sketch[sketch_bucket(t)];
    s.max_ns = std::max(s.max_ns, t);
    s.bytes += c.call.bytes;
  }
  if (fb != b.findings.size()) return false;
  // Counts: what the judged calls contribute now is b's less what was carried before; the rest of a's is carried.
  for (const auto& [rule, count] : b.not_observed) {
    const uint64_t before = log.carried.not_observed.count(rule) ? log.carried.not_observed.at(rule) : 0;
    const uint64_t total = a.not_observed.count(rule) ? a.not_observed.at(rule) : 0;
    if (count < before || count - before > total) return false;
  }
  carried.not_observed.clear();
  for (const auto& [rule, total] : a.not_observed) {
    const uint64_t now = b.not_observed.count(rule) ? b.not_observed.at(rule) : 0;
    const uint64_t before = log.carried.not_observed.count(rule) ? log.carried.not_observed.at(rule) : 0;
    if (now < before || now - before > total) return false;
    if (total - (now - before) > 0) carried.not_observed[rule] = total - (now - before);
  }
  const uint64_t ctx_now = b.context_creation_ns - log.carried.context_creation_ns;
  const uint64_t kd_now = b.kind_disagreements - log.carried.kind_disagreements;
  const uint64_t captured_now = b.captured_calls - log.carried.captured_calls;
  if (ctx_now > a.context_creation_ns || kd_now > a.kind_disagreements || captured_now > a.captured_calls) return false;
  carried.context_creation_ns = a.context_creation_ns - ctx_now;
  carried.kind_disagreements = a.kind_disagreements - kd_now;
  carried.captured_calls = a.captured_calls - captured_now;
  carried.calls += n - small.calls.size();
  carried.ops += m - small.ops.size();
  small.carried = std::move(carried);
  if (stats) *stats = {n, small.calls.size(), m, small.ops.size()};
  log = std::move(small);
  return true;
}

bool compacted(const EventLog& log) {
  if (!log.carried.empty()) return true;
  return std::any_of(log.calls.begin(), log.calls.end(), [](const ApiCall& c) { return c.context_only; });
}

}  // namespace asynccheck
