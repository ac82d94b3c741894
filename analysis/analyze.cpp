#include "analysis/analyze.h"

#include "analysis/correlation.h"
#include "analysis/stream_index.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "analysis/graph_capture.h"
#include "analysis/names.h"

namespace asynccheck {
namespace {

using rules::ApiKind;
using rules::MemoryKind;
using rules::StreamKind;

// Special stream handles and flags: analysis/events.h.
constexpr uint32_t kBlockingSyncFlag = 0x1;   // cudaEventBlockingSync == CU_EVENT_BLOCKING_SYNC

bool is_own(const GpuOp& op, const ApiCall& c) {
  return op.correlation_id == c.correlation_id ||
         (c.driver_correlation_id != 0 && op.correlation_id == c.driver_correlation_id);
}

struct Index {
  std::optional<CorrelationIndex> corr;  // ops_of: work ops only (not sync records)
  std::optional<StreamIndex> streams;                               // per stream, what ended before an op started
  std::vector<size_t> ops_by_end;                                   // work ops sorted by end
  std::vector<uint64_t> enqueue_ns;                                 // per op: when its call returned (0 unknown)
  std::vector<StreamKind> op_stream_kind;                           // per op
};

class Analyzer {
 public:
  Analyzer(const EventLog& log, const AnalysisOptions& opt) : log_(log), opt_(opt) {}

  Analysis run() {
    out_.calls_watched = log_.calls.size() + log_.carried.calls;
    out_.not_observed = log_.carried.not_observed;
    out_.context_creation_ns = log_.carried.context_creation_ns;
    out_.kind_disagreements = log_.carried.kind_disagreements;
    out_.captured_calls = log_.carried.captured_calls;
    build_index();
    own_stream_.assign(log_.calls.size(), UINT32_MAX);
    for (size_t i = 0; i < log_.calls.size(); ++i) own_stream_[i] = first_work_stream(i);
    describe_calls();
    resolve_streams();
    for (size_t i = 0; i < log_.calls.size(); ++i) {
      out_.predicted.push_back(rules::predict(out_.described[i]));
    }
    index_op_streams();
    find_running_work();
    for (size_t i = 0; i < log_.calls.size(); ++i) {
      if (log_.calls[i].context_only) continue;
      if (out_.described[i].captured) {
        ++out_.captured_calls;  // recorded into a graph: what it costs shows when the graph is launched
      } else if (!is_capture_error(log_.calls[i].result)) {
        judge_host(i);
      }
    }
    for (size_t i = 0; i < log_.calls.size(); ++i) {
      if (!log_.calls[i].context_only && !out_.described[i].captured) judge_legacy_stream(i);
    }
    std::stable_sort(out_.findings.begin(), out_.findings.end(),
                     [](const Finding& a, const Finding& b) { return a.call < b.call; });
    out_.event_record = event_record_;
    return std::move(out_);
  }

 private:
  void build_index() {
    idx_.corr.emplace(log_.calls, log_.ops, /*work_only=*/true);
    idx_.enqueue_ns.assign(log_.ops.size(), 0);
    idx_.op_stream_kind.assign(log_.ops.size(), StreamKind::Unknown);
    for (size_t i = 0; i < log_.ops.size(); ++i) {
      const GpuOp& op = log_.ops[i];
      if (op.kind == GpuOpKind::Sync) continue;
      idx_.ops_by_end.push_back(i);
      const int64_t c = idx_.corr->producer(i);
      if (c < 0) continue;  // work of a call we do not watch
      idx_.enqueue_ns[i] = log_.calls[static_cast<size_t>(c)].end_ns;
    }
    idx_.streams.emplace(log_.ops);
    marks_ = log_.marks;
    std::stable_sort(marks_.begin(), marks_.end(), [](const Mark& a, const Mark& b) { return a.time_ns < b.time_ns; });
    std::stable_sort(idx_.ops_by_end.begin(), idx_.ops_by_end.end(),
              [&](size_t a, size_t b) { return log_.ops[a].end_ns < log_.ops[b].end_ns; });
  }

  StreamKind stream_kind_of(const ApiCall& c, const std::unordered_map<uint64_t, StreamKind>& streams) const {
    const StreamKind named = rules::default_stream_named(c.call, c.stream);
    if (named != StreamKind::Unknown) return named;
    auto it = streams.find(c.stream);
    return it == streams.end() ? StreamKind::Unknown : it->second;
  }

  // Completes each call's description in program order: stream kinds from the streams created so far, whether
  // it was captured into a graph, event wait modes, stream-ordered pointers, first launches, memory kinds confirmed
  // by the activity records.
  void describe_calls() {
    std::unordered_map<uint64_t, StreamKind> streams;
    std::unordered_map<uint64_t, rules::WaitMode> events;
    std::unordered_map<uint64_t, size_t> recorded;  // event -> its last cudaEventRecord
    std::unordered_set<uint64_t> stream_ordered, launched;
    CaptureTracker capture;
    event_record_.assign(log_.calls.size(), -1);
    for (const ApiCall& c : log_.calls) {
      rules::CallDescription d = c.call;
      d.env = log_.run.env;
      if (rules::traits(d.api).takes_stream || rules::uses_implicit_default_stream(d)) d.stream = stream_kind_of(c, streams);
      d.captured = false;  // ours to decide, from the capture calls before it
      if (capture.observe(c, d)) out_.capture_state_calls.push_back(static_cast<size_t>(&c - log_.calls.data()));
      switch (d.api) {
        case ApiKind::StreamCreate:
          streams[c.handle] = (c.flags & kStreamNonBlockingFlag) ? StreamKind::NonBlocking : StreamKind::Blocking;
          break;
        case ApiKind::StreamDestroy: streams.erase(c.handle); break;
        case ApiKind::EventCreate:
          events[c.handle] = (c.flags & kBlockingSyncFlag) ? rules::WaitMode::BlockingSync : rules::WaitMode::Auto;
          break;
        case ApiKind::EventSynchronize: {
          auto it = events.find(c.handle);
          if (it != events.end()) d.wait_mode = it->second;
          auto r = recorded.find(c.handle);
          if (r != recorded.end()) event_record_[static_cast<size_t>(&c - log_.calls.data())] = static_cast<int64_t>(r->second);
          break;
        }
        case ApiKind::EventRecord:
          if (c.result == 0) recorded[c.handle] = static_cast<size_t>(&c - log_.calls.data());
          break;
        case ApiKind::StreamOrderedAlloc: stream_ordered.insert(c.handle); break;
        case ApiKind::StreamOrderedFree: stream_ordered.erase(c.handle); break;
        case ApiKind::Free:
          d.stream_ordered_pointer = stream_ordered.erase(c.handle) > 0;
          break;
        case ApiKind::KernelLaunch: d.first_launch = launched.insert(c.function).second; break;
        case ApiKind::GraphLaunch:
          for (size_t oi : idx_.corr->ops_of(static_cast<size_t>(&c - log_.calls.data()))) {
            const GpuOp& op = log_.ops[oi];
            d.pageable_copy_node = d.pageable_copy_node || (op.kind == GpuOpKind::Memcpy &&
                                    (memory_kind_from_activity(op.src_kind) == MemoryKind::Pageable ||
                                     memory_kind_from_activity(op.dst_kind) == MemoryKind::Pageable));
          }
          break;
        case ApiKind::Copy:
        case ApiKind::Memset: confirm_memory_kinds(c, d); break;
        default: break;
      }
      out_.described.push_back(d);
    }
    mark_pending_blocking_work();
  }

  // The activity record of a copy carries the driver's own view of each side's memory kind; it wins over our
  // registry (which cannot see memory pinned before we attached or by an API we do not watch).
  void confirm_memory_kinds(const ApiCall& c, rules::CallDescription& d) {
    for (size_t oi : idx_.corr->ops_of(static_cast<size_t>(&c - log_.calls.data()))) {
      const GpuOp& op = log_.ops[oi];
      if (op.kind != GpuOpKind::Memcpy) continue;
      MemoryKind src = memory_kind_from_activity(op.src_kind), dst = memory_kind_from_activity(op.dst_kind);
      if ((src != MemoryKind::Unknown && src != d.src) || (dst != MemoryKind::Unknown && dst != d.dst)) {
        if ((d.src != MemoryKind::Unknown || d.dst != MemoryKind::Unknown) && !c.context_only) {
          out_.disagreeing_calls.push_back(static_cast<size_t>(&c - log_.calls.data()));
          disagreements_[c.correlation_id] = "activity record says " + std::string(name_of(src)) + " -> " +
                                             std::string(name_of(dst)) + ", the call looked like " +
                                             std::string(name_of(d.src)) + " -> " + std::string(name_of(d.dst));
          ++out_.kind_disagreements;
        }
        if (src != MemoryKind::Unknown) d.src = src;
        if (dst != MemoryKind::Unknown) d.dst = dst;
      }
      return;
    }
  }

  // blocking_streams_pending: at the call's entry, some blocking stream other than the call's own holds work that
  // was enqueued earlier and has not finished. Measured from the activity records (the ground truth); one sweep.
  void mark_pending_blocking_work() {
    std::vector<size_t> blocking_ops;
    for (size_t i = 0; i < log_.ops.size(); ++i) {
      if (log_.ops[i].kind == GpuOpKind::Sync || idx_.enqueue_ns[i] == 0) continue;
      const auto c = static_cast<size_t>(idx_.corr->producer(i));  // enqueue_ns != 0: it has one
      if (blocking_kind(out_.described[c].stream) && rules::traits(out_.described[c].api).takes_stream) {
        blocking_ops.push_back(i);
      }
    }
    std::sort(blocking_ops.begin(), blocking_ops.end(),
              [&](size_t a, size_t b) { return idx_.enqueue_ns[a] < idx_.enqueue_ns[b]; });
    std::vector<size_t> order(log_.calls.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return log_.calls[a].start_ns < log_.calls[b].start_ns; });
    std::unordered_map<uint32_t, uint64_t> latest_end;  // per blocking stream: the latest end enqueued so far
    size_t next = 0;
    for (size_t ci : order) {
      const ApiCall& c = log_.calls[ci];
      for (; next < blocking_ops.size() && idx_.enqueue_ns[blocking_ops[next]] <= c.start_ns; ++next) {
        const GpuOp& op = log_.ops[blocking_ops[next]];
        uint64_t& end = latest_end[op.stream_id];
        end = std::max(end, op.end_ns);
      }
      const uint32_t own = own_stream_id(ci);
      bool pending = false;
      for (const auto& [stream, end] : latest_end) pending = pending || (stream != own && end > c.start_ns);
      out_.described[ci].blocking_streams_pending = pending;
    }
  }

  uint32_t own_stream_id(size_t call) const { return own_stream_[call]; }

  uint32_t first_work_stream(size_t call) const {
    const int64_t first = first_work_op(idx_.corr->ops_of(call), log_.ops);
    return first < 0 ? UINT32_MAX : log_.ops[static_cast<size_t>(first)].stream_id;
  }

  void index_op_streams() {
    for (size_t i = 0; i < log_.ops.size(); ++i) {
      const int64_t c = idx_.corr->producer(i);
      if (c >= 0) idx_.op_stream_kind[i] = out_.described[static_cast<size_t>(c)].stream;
    }
  }

  bool mark_within(MarkKind kind, const ApiCall& c) const {
    auto it = std::lower_bound(marks_.begin(), marks_.end(), c.start_ns,
                               [](const Mark& m, uint64_t t) { return m.time_ns < t; });
    for (; it != marks_.end() && it->time_ns <= c.end_ns; ++it) {
      if (it->kind == kind) return true;
    }
    return false;
  }

  // Per call, the CUPTI stream its stream argument names: its own work's, or else that of the latest earlier call
  // on the same handle (the same thread's, for a per-thread default stream) that enqueued work. A stream or event
  // synchronize enqueues nothing of its own; UINT32_MAX when no work on that stream was seen before it.
  void resolve_streams() {
    anchor_stream_.assign(log_.calls.size(), UINT32_MAX);
    std::map<std::tuple<StreamKind, uint64_t, uint32_t>, uint32_t> seen;
    for (size_t i = 0; i < log_.calls.size(); ++i) {
      const ApiCall& c = log_.calls[i];
      const StreamKind kind = out_.described[i].stream;
      const auto key = std::make_tuple(kind, kind == StreamKind::LegacyDefault || kind == StreamKind::PerThreadDefault ? 0 : c.stream,
                                       kind == StreamKind::PerThreadDefault ? c.thread : 0u);
      if (own_stream_[i] != UINT32_MAX) {
        seen[key] = own_stream_[i];
        anchor_stream_[i] = own_stream_[i];
      } else if (auto it = seen.find(key); it != seen.end()) {
        anchor_stream_[i] = it->second;
      }
      if (out_.described[i].api == ApiKind::StreamDestroy) {
        for (auto it = seen.begin(); it != seen.end();) it = std::get<1>(it->first) == c.handle ? seen.erase(it) : std::next(it);
      }
    }
  }

  // The op in `self`'s stream that ended last at or before `self` started (the first in start order among equal
  // ends), -1 if none.
  int64_t previous_in_stream(size_t self) const { return idx_.streams->previous(self); }

  // What call `ci` can wait for (analyze.h: WaitScope), from its documented behaviour.
  struct Scope {
    WaitScope kind = WaitScope::Device;
    size_t anchor = 0;          // the call whose stream it is: itself, or the last record of the event it waits on
    uint64_t enqueued_by = 0;   // work enqueued after this (the anchor's call returned later) is not waited for
    bool own_kernels = false;   // its own kernels are awaited too (CUDA_LAUNCH_BLOCKING=1)
  };

  Scope scope_of(size_t ci) const {
    const ApiCall& c = log_.calls[ci];
    const rules::CallDescription& d = out_.described[ci];
    const rules::Prediction& p = out_.predicted[ci];
    Scope s;
    s.anchor = ci;
    s.enqueued_by = c.start_ns;
    switch (d.api) {
      // A copy or memset that holds the host by rule waits for its stream (on the legacy stream, for the blocking
      // streams too), then does its transfer; its own transfer is always awaited (below).
      case ApiKind::Copy:
      case ApiKind::Memset:
        if (p.may_hold_host()) s.kind = WaitScope::Stream;
        break;
      case ApiKind::KernelLaunch:
        if (p.host_rule == rules::RuleId::LaunchBlockingEnv) {
          s.kind = WaitScope::Stream;
          s.own_kernels = true;
        }
        break;  // a first launch: loading a module may synchronize the whole context
      case ApiKind::GraphLaunch:  // a pageable memcpy node: it waits for its stream, up to that node
        if (p.may_hold_host()) s.kind = WaitScope::Stream;
        break;
      case ApiKind::StreamSynchronize: s.kind = WaitScope::Stream; break;
      case ApiKind::EventSynchronize:
        if (event_record_[ci] >= 0) {  // the stream the event was last recorded in, up to that record
          s.kind = WaitScope::Stream;
          s.anchor = static_cast<size_t>(event_record_[ci]);
          s.enqueued_by = log_.calls[s.anchor].end_ns;
        }
        break;
      default: break;
    }
    return s;
  }

  // Whether op `oi` is work that call `ci` waits for within scope `s`. `strict`: only work certainly in it (the
  // check that the call did not wait): the anchor's own stream, not the blocking streams a legacy-stream command
  // waits for as well, nor work of calls we do not watch.
  bool in_scope(size_t ci, const Scope& s, size_t oi, bool strict) const {
    const ApiCall& c = log_.calls[ci];
    const GpuOp& op = log_.ops[oi];
    if (is_own(op, c)) return op.kind == GpuOpKind::Memcpy || op.kind == GpuOpKind::Memset || s.own_kernels;
    if (s.kind == WaitScope::Device) return true;
    if (s.kind != WaitScope::Stream) return false;
    const uint32_t own = anchor_stream_[s.anchor];
    if (own != UINT32_MAX && op.stream_id == own) return true;
    const StreamKind kind = out_.described[s.anchor].stream;
    const int64_t p = idx_.corr->producer(oi);
    // Work no watched call enqueued: in its stream only when the stream is not known (legacy: on a blocking one).
    if (p < 0) {
      return !strict && (own == UINT32_MAX || (kind == StreamKind::LegacyDefault && op.stream_id != kMigrationStream));
    }
    const auto& producer = log_.calls[static_cast<size_t>(p)];
    const StreamKind pk = out_.described[static_cast<size_t>(p)].stream;
    if (kind == StreamKind::LegacyDefault && !strict && blocking_kind(pk)) return true;
    if (pk != kind) return false;
    if (kind == StreamKind::LegacyDefault) return true;
    if (kind == StreamKind::PerThreadDefault) return producer.thread == log_.calls[s.anchor].thread;
    return producer.stream == log_.calls[s.anchor].stream;
  }

  // Per call, work in its scope that was enqueued before it began, in flight then, and still running when it
  // returned (Evidence::running_op): a call that waits for its whole scope cannot return before that work ends,
  // so it did not wait. Only for calls a rule says wait (a call no rule describes may wait for part of its scope: a
  // launch on a full queue waits for one slot). One sweep over the calls by start.
  void find_running_work() {
    running_.assign(log_.calls.size(), -1);
    std::vector<size_t> by_enqueue;
    for (size_t i = 0; i < log_.ops.size(); ++i) {
      if (log_.ops[i].kind != GpuOpKind::Sync && idx_.enqueue_ns[i] != 0) by_enqueue.push_back(i);
    }
    std::stable_sort(by_enqueue.begin(), by_enqueue.end(),
                     [&](size_t a, size_t b) { return idx_.enqueue_ns[a] < idx_.enqueue_ns[b]; });
    std::vector<size_t> order(log_.calls.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return log_.calls[a].start_ns < log_.calls[b].start_ns; });
    std::unordered_map<uint32_t, size_t> latest;  // per stream: of the work enqueued so far, the op that ends last
    size_t next = 0;
    for (size_t ci : order) {
      const ApiCall& c = log_.calls[ci];
      for (; next < by_enqueue.size() && idx_.enqueue_ns[by_enqueue[next]] <= c.start_ns; ++next) {
        const size_t oi = by_enqueue[next];
        auto [it, fresh] = latest.try_emplace(log_.ops[oi].stream_id, oi);
        if (!fresh && log_.ops[oi].end_ns > log_.ops[it->second].end_ns) it->second = oi;
      }
      // Work that ended before this call began ended before every later one began too.
      for (auto it = latest.begin(); it != latest.end();) {
        it = log_.ops[it->second].end_ns <= c.start_ns ? latest.erase(it) : std::next(it);
      }
      if (!out_.predicted[ci].may_hold_host() || c.end_ns - c.start_ns < opt_.threshold_ns) continue;
      const Scope s = scope_of(ci);
      if (s.kind == WaitScope::None) continue;
      for (const auto& [stream, oi] : latest) {
        const GpuOp& op = log_.ops[oi];
        if (op.start_ns == 0 || op.end_ns <= c.end_ns + opt_.release_window_ns) continue;
        if (idx_.enqueue_ns[oi] > s.enqueued_by || !in_scope(ci, s, oi, /*strict=*/true)) continue;
        if (running_[ci] < 0 || op.end_ns > log_.ops[static_cast<size_t>(running_[ci])].end_ns) {
          running_[ci] = static_cast<int64_t>(oi);
        }
      }
    }
  }

  // What the call waited for: the last GPU operation in its scope that ended while it held the host (its own transfer
  // may end after it returned: a staged copy's last DMA), enqueued before the call began. The time up to that
  // end is waited, the rest is the call's own cost. No window around the return decides it: a call that waits and
  // then works (cudaFree unmapping after the device went idle) names the work it waited for.
  Evidence attribute(size_t ci, uint64_t& waited) const {
    const ApiCall& c = log_.calls[ci];
    Evidence ev;
    waited = 0;
    if (mark_within(MarkKind::ContextCreated, c)) {
      ev.by = ReleasedBy::ContextCreation;
      return ev;
    }
    const Scope s = scope_of(ci);
    ev.scope = s.kind;
    ev.running_op = running_[ci];
    const bool waited_for_scope = ev.running_op < 0;  // else only its own transfer can have held it
    // Its own transfer, if a rule says the call does it before returning: held for as long as the transfer ran
    // while it held the host, however late the DMA of the last staged chunk ends (behind other processes' copies
    // on a shared GPU). Otherwise its own transfer only if it began before and ended by its return (gpu_gap_ns of
    // clock skew allowed).
    const bool does_own_transfer = out_.predicted[ci].may_hold_host();
    auto effective_end = [&](const GpuOp& op) { return std::min(op.end_ns, c.end_ns); };
    int64_t best = -1;
    for (size_t oi : idx_.corr->ops_of(ci)) {
      const GpuOp& op = log_.ops[oi];
      if (op.start_ns == 0 || op.end_ns <= c.start_ns || op.start_ns >= c.end_ns || !in_scope(ci, s, oi, false)) continue;
      // A call no rule says does its transfer before returning waited for it only if it ended by the return.
      if (!does_own_transfer && op.end_ns > c.end_ns + opt_.gpu_gap_ns) continue;
      if (best < 0 || effective_end(op) > effective_end(log_.ops[static_cast<size_t>(best)])) best = static_cast<int64_t>(oi);
    }
    // Else the last work in its scope to end while it held the host, enqueued before it began.
    const uint64_t hi = c.end_ns + opt_.gpu_gap_ns;
    auto first = std::upper_bound(idx_.ops_by_end.begin(), idx_.ops_by_end.end(), c.start_ns,
                                  [&](uint64_t t, size_t oi) { return t < log_.ops[oi].end_ns; });
    int64_t other = -1;
    if (waited_for_scope && s.kind != WaitScope::None) {
      for (auto it = first; it != idx_.ops_by_end.end() && log_.ops[*it].end_ns <= hi; ++it) {
        const size_t oi = *it;
        const GpuOp& op = log_.ops[oi];
        if (op.start_ns == 0 || is_own(op, c)) continue;  // untimed work proves nothing; own work: above
        if (other >= 0 && op.end_ns == log_.ops[static_cast<size_t>(other)].end_ns) continue;  // ties: the first
        if (idx_.enqueue_ns[oi] > s.enqueued_by || !in_scope(ci, s, oi, false)) continue;
        other = static_cast<int64_t>(oi);
      }
    }
    if (other >= 0 && (best < 0 || effective_end(log_.ops[static_cast<size_t>(other)]) >
                                       effective_end(log_.ops[static_cast<size_t>(best)]))) {
      best = other;
    }
    if (best < 0) {
      ev.by = mark_within(MarkKind::ModuleLoaded, c) ? ReleasedBy::ModuleLoad : ReleasedBy::NothingOnGpu;
      return ev;
    }
    const GpuOp& op = log_.ops[static_cast<size_t>(best)];
    ev.op = best;
    ev.gap_ns = static_cast<int64_t>(c.end_ns) - static_cast<int64_t>(op.end_ns);
    waited = std::min(op.end_ns, c.end_ns) - c.start_ns;
    const uint32_t own = anchor_stream_[s.anchor];
    if (is_own(op, c)) {
      ev.by = ReleasedBy::OwnWork;
      // Did its own work have to wait for earlier work in the stream before it could start?
      if (op.start_ns > c.start_ns + opt_.gpu_gap_ns) {
        int64_t prev = previous_in_stream(static_cast<size_t>(best));
        if (prev >= 0 && log_.ops[static_cast<size_t>(prev)].end_ns + opt_.gpu_gap_ns >= op.start_ns &&
            log_.ops[static_cast<size_t>(prev)].end_ns > c.start_ns) {
          ev.behind_op = prev;
        }
        // Nothing held it back: the time before its transfer began was the call's own (setting the copy up,
        // staging its first chunk), and only the transfer is waited for.
        if (ev.behind_op < 0) waited = std::min(op.end_ns, c.end_ns) - std::max(op.start_ns, c.start_ns);
      }
    } else if (s.kind == WaitScope::Stream &&
               ((own != UINT32_MAX && op.stream_id == own) || in_scope(ci, s, static_cast<size_t>(best), true))) {
      ev.by = ReleasedBy::EarlierWorkSameStream;
    } else if (s.kind == WaitScope::Device && own_stream_id(ci) != UINT32_MAX && op.stream_id == own_stream_id(ci)) {
      ev.by = ReleasedBy::EarlierWorkSameStream;
    } else {
      ev.by = ReleasedBy::OtherStreamWork;
    }
    return ev;
  }

  static rules::RuleId cost_rule(ApiKind api, ReleasedBy by) {
    if (by == ReleasedBy::ModuleLoad) return rules::RuleId::CostModuleLoad;
    switch (api) {
      case ApiKind::DeviceAlloc:
      case ApiKind::PinnedAlloc:
      case ApiKind::HostRegister:
      case ApiKind::HostUnregister:
      case ApiKind::ManagedAlloc:
      case ApiKind::Free:
      case ApiKind::FreeHost: return rules::RuleId::CostAllocation;
      default: return rules::RuleId::CostCall;
    }
  }

  // A call that waited for GPU work at least threshold_ns is a sync finding, under the rule that predicts the
  // wait, or undocumented-block when none does. A call that waited less but spent cost_threshold_ns of its own is
  // a cost finding (level note): never under a synchronization title. A documented wait under the threshold is
  // kept as a below-threshold finding, for sites whose waits add up.
  void judge_host(size_t ci) {
    const ApiCall& c = log_.calls[ci];
    const rules::Prediction& p = out_.predicted[ci];
    const uint64_t held = c.end_ns - c.start_ns;
    const bool documented = p.may_hold_host();
    // Neither a wait past the threshold nor a cost past the cost threshold is possible.
    if (held < std::min(opt_.threshold_ns, opt_.cost_threshold_ns) && !documented) return;
    Finding f;
    f.call = ci;
    f.held_ns = held;
    f.predicted = p.host_rule;
    f.evidence = attribute(ci, f.waited_ns);
    f.own_ns = held - f.waited_ns;
    if (f.evidence.by == ReleasedBy::ContextCreation) {
      out_.context_creation_ns += held;  // the first call of the process pays for the context: not a sync issue
      if (documented) ++out_.not_observed[p.host_rule];
      return;
    }
    if (f.waited_ns >= opt_.threshold_ns) {
      if (documented) {
        f.verdict = Verdict::DocumentedObserved;
        f.rule = p.host_rule;
      } else if (c.call.api == ApiKind::KernelLaunch && mark_within(MarkKind::ModuleLoaded, c)) {
        f.verdict = Verdict::DocumentedObserved;  // lazy loading of a function we had seen launched through another path
        f.rule = rules::RuleId::FirstLaunchLazyLoading;
      } else {
        f.verdict = Verdict::ObservedUndocumented;
        f.rule = rules::RuleId::UndocumentedBlock;
      }
    } else {
      if (documented) ++out_.not_observed[p.host_rule];  // it did not wait as the rule says it may
      if (f.own_ns >= opt_.cost_threshold_ns) {
        f.verdict = Verdict::OwnCost;
        f.rule = cost_rule(c.call.api, f.evidence.by == ReleasedBy::ModuleLoad || mark_within(MarkKind::ModuleLoaded, c)
                                           ? ReleasedBy::ModuleLoad
                                           : f.evidence.by);
      } else if (documented && f.waited_ns > 0) {
        f.verdict = Verdict::DocumentedObserved;
        f.rule = p.host_rule;
        f.below_threshold = true;
      } else {
        return;
      }
    }
    f.level = rules::rule(f.rule).level;
    auto dis = disagreements_.find(c.correlation_id);
    if (dis != disagreements_.end()) f.note = dis->second;
    out_.findings.push_back(std::move(f));
  }

  // How long `op` started after it could have: after its enqueue and after the previous op in its own stream.
  uint64_t held_back(size_t oi) const {
    const GpuOp& op = log_.ops[oi];
    uint64_t ready = idx_.enqueue_ns[oi];
    int64_t prev = previous_in_stream(oi);
    if (prev >= 0) ready = std::max(ready, log_.ops[static_cast<size_t>(prev)].end_ns);
    return op.start_ns > ready ? op.start_ns - ready : 0;
  }

  // GPU-side effect of a legacy-stream command: it waited for work in blocking streams (delay in) and work in
  // blocking streams waited for it (delay out). Measured from the activity timestamps.
  void judge_legacy_stream(size_t ci) {
    const rules::Prediction& p = out_.predicted[ci];
    if (p.gpu != rules::GpuEffect::SerializesWithBlockingStreams) return;
    const int64_t first = first_work_op(idx_.corr->ops_of(ci), log_.ops);
    if (first < 0) {
      ++out_.not_observed[rules::RuleId::LegacyStreamSerialization];
      return;
    }
    const auto li = static_cast<size_t>(first);
    const GpuOp& legacy = log_.ops[li];
    Finding f;
    f.call = ci;
    f.held_ns = log_.calls[ci].end_ns - log_.calls[ci].start_ns;
    f.predicted = p.host_rule;
    f.rule = rules::RuleId::LegacyStreamSerialization;
    f.level = rules::rule(f.rule).level;
    f.verdict = Verdict::DocumentedObserved;
    uint64_t delay_in = 0, delay_out = 0;
    // Delay in: the legacy op started late, right after work in another blocking stream ended.
    const uint64_t in = held_back(li);
    if (in > opt_.gpu_gap_ns) {
      for (size_t oi : idx_.ops_by_end) {
        const GpuOp& x = log_.ops[oi];
        if (oi == li || x.stream_id == legacy.stream_id || !blocking_kind(idx_.op_stream_kind[oi])) continue;
        if (x.end_ns <= legacy.start_ns && x.end_ns + opt_.gpu_gap_ns >= legacy.start_ns) {
          delay_in = in;
          f.evidence.op = static_cast<int64_t>(oi);
          f.evidence.by = ReleasedBy::OtherStreamWork;
        }
      }
    }
    // Delay out: work in other blocking streams, enqueued before the legacy op ended, started only when it ended.
    for (size_t oi = 0; oi < log_.ops.size(); ++oi) {
      const GpuOp& y = log_.ops[oi];
      if (y.kind == GpuOpKind::Sync || y.stream_id == legacy.stream_id || !blocking_kind(idx_.op_stream_kind[oi])) continue;
      if (idx_.enqueue_ns[oi] == 0 || idx_.enqueue_ns[oi] >= legacy.end_ns) continue;
      if (y.start_ns < legacy.end_ns || y.start_ns > legacy.end_ns + opt_.gpu_gap_ns) continue;
      const uint64_t out = held_back(oi);
      if (out > delay_out) {
        delay_out = out;
        if (f.evidence.op < 0) f.evidence.op = static_cast<int64_t>(oi);
        f.evidence.behind_op = static_cast<int64_t>(oi);
      }
    }
    f.gpu_delay_ns = delay_in + delay_out;
    if (f.gpu_delay_ns < opt_.threshold_ns) {
      ++out_.not_observed[rules::RuleId::LegacyStreamSerialization];
      return;
    }
    f.evidence.by = ReleasedBy::OtherStreamWork;
    out_.findings.push_back(std::move(f));
  }

  const EventLog& log_;
  const AnalysisOptions& opt_;
  Index idx_;
  Analysis out_;
  std::unordered_map<uint64_t, std::string> disagreements_;
  std::vector<Mark> marks_;            // log_.marks by time
  std::vector<uint32_t> own_stream_;   // per call: the CUPTI stream of its first work op, or UINT32_MAX
  std::vector<uint32_t> anchor_stream_;  // per call: resolve_streams()
  std::vector<int64_t> event_record_;  // per call: an event synchronize's event's last record before it, or -1
  std::vector<int64_t> running_;       // per call: find_running_work()
};

}  // namespace

bool blocking_kind(StreamKind k) {
  // Unknown handles were created before we attached or by a path we do not watch: cudaStreamCreate's default is
  // blocking.
  return k == StreamKind::Blocking || k == StreamKind::PerThreadDefault || k == StreamKind::Unknown;
}

Analysis analyze(const EventLog& log, const AnalysisOptions& options) { return Analyzer(log, options).run(); }

std::string_view released_by_text(ReleasedBy r) {
  switch (r) {
    case ReleasedBy::OwnWork: return "its own GPU work";
    case ReleasedBy::EarlierWorkSameStream: return "earlier work in its stream";
    case ReleasedBy::OtherStreamWork: return "work in other streams";
    case ReleasedBy::ModuleLoad: return "loading of a kernel module";
    case ReleasedBy::ContextCreation: return "CUDA context creation";
    case ReleasedBy::NothingOnGpu: return "nothing on the GPU (the call's own cost)";
  }
  return "unknown";
}

std::string_view verdict_text(Verdict v) {
  switch (v) {
    case Verdict::DocumentedObserved: return "documented-and-observed";
    case Verdict::DocumentedNotObserved: return "documented-but-not-observed";
    case Verdict::ObservedUndocumented: return "observed-but-undocumented";
    case Verdict::OwnCost: return "own-cost";
  }
  return "unknown";
}

rules::MemoryKind memory_kind_from_activity(uint8_t k) {
  switch (k) {
    case 1: return MemoryKind::Pageable;
    case 2: return MemoryKind::Pinned;
    case 3: case 6: return MemoryKind::Device;
    case 4: return MemoryKind::Array;
    case 5: case 7: return MemoryKind::Managed;
    default: return MemoryKind::Unknown;
  }
}

}  // namespace asynccheck
