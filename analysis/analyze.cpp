#include "analysis/analyze.h"

#include <algorithm>
#include <optional>
#include <span>
#include <unordered_map>

#include "analysis/analyzer.h"
#include "analysis/awaited_records.h"
#include "analysis/correlation.h"
#include "analysis/names.h"
#include "analysis/stream_index.h"

namespace asynccheck {

using rules::ApiKind;
using rules::MemoryKind;
using rules::StreamKind;

namespace {

// Special stream handles and flags: analysis/events.h.
constexpr uint32_t kBlockingSyncFlag = 0x1;  // cudaEventBlockingSync == CU_EVENT_BLOCKING_SYNC
// How far back what held up the work a call waited for is followed (held_up): a bound on a queue of many small
// kernels, each link found by a search; a queue longer than this is judged by its last links.
constexpr int kMaxLinks = 4096;

bool is_own(const GpuOp& op, const ApiCall& c) {
  return op.correlation_id == c.correlation_id ||
         (c.driver_correlation_id != 0 && op.correlation_id == c.driver_correlation_id);
}

}  // namespace

// Built over the window at each step, into the memory of the previous step's: which call enqueued each op, when,
// and its call's stream kind. Per-stream order and the ops by end are read only when a judged call needs them (most
// steps of a launch loop judge nothing that reads them): built then.
struct Analyzer::Index {
  void build(const EventLog& log) {
    log_ = &log;
    corr.build(log.calls, log.ops, /*work_only=*/true);
    streams_.reset();
    by_end_built_ = false;
    enqueue_ns.assign(log.ops.size(), 0);
    op_stream_kind.assign(log.ops.size(), StreamKind::Unknown);
    for (size_t i = 0; i < log.ops.size(); ++i) {
      if (log.ops[i].kind == GpuOpKind::Sync) continue;
      const int64_t c = corr.producer(i);
      if (c >= 0) enqueue_ns[i] = log.calls[static_cast<size_t>(c)].end_ns;  // else work of a call we do not watch
    }
  }
  // Per stream, what ended before op `self` started (StreamIndex::previous).
  int64_t previous(size_t self) const {
    if (!streams_) streams_.emplace(log_->ops);
    return streams_->previous(self);
  }
  // Work ops sorted by end.
  const std::vector<size_t>& ops_by_end() const {
    if (!by_end_built_) {
      by_end_.clear();
      for (size_t i = 0; i < log_->ops.size(); ++i) {
        if (log_->ops[i].kind != GpuOpKind::Sync) by_end_.push_back(i);
      }
      const OpVector& ops = log_->ops;
      std::stable_sort(by_end_.begin(), by_end_.end(),
                       [&](size_t a, size_t b) { return ops[a].end_ns < ops[b].end_ns; });
      by_end_built_ = true;
    }
    return by_end_;
  }
  CorrelationIndex corr;                   // ops_of: work ops only (not sync records)
  std::vector<uint64_t> enqueue_ns;        // per op: when its call returned (0 unknown)
  std::vector<StreamKind> op_stream_kind;  // per op: its call's stream kind, once that call is described

 private:
  const EventLog* log_ = nullptr;
  mutable std::optional<StreamIndex> streams_;
  mutable std::vector<size_t> by_end_;
  mutable bool by_end_built_ = false;
};

Analyzer::Analyzer(const AnalysisOptions& options, const rules::Environment& env)
    : opt_(options), env_(env), idx_(std::make_unique<Index>()) {}
Analyzer::~Analyzer() = default;

namespace {

// Judges the calls of one step. What it reads of a call is its CallState (described and anchored by
// Analyzer::describe); what it reads of other calls is the window's events.
class Judge {
 public:
  Judge(const EventLog& log, const Analyzer& a, const AnalysisOptions& opt, Analysis& counts,
        std::vector<Finding>& findings)
      : log_(log), a_(a), opt_(opt), counts_(counts), findings_(findings) {
    marks_ = log.marks;
    std::stable_sort(marks_.begin(), marks_.end(), [](const Mark& x, const Mark& y) { return x.time_ns < y.time_ns; });
  }

  void run(const Analyzer::Index& idx, const std::vector<size_t>& judged) {
    idx_ = &idx;
    find_running_work(judged);
    const size_t first = findings_.size();
    for (size_t i : judged) {
      const ApiCall& c = log_.calls[i];
      if (c.context_only) continue;
      if (st(i).outside_range) {
        ++counts_.outside_range_calls;
      } else if (st(i).described.captured) {
        ++counts_.captured_calls;  // recorded into a graph: what it costs shows when the graph is launched
      } else if (!is_capture_error(c.result)) {
        judge_host(i);
      }
    }
    for (size_t i : judged) {
      if (!log_.calls[i].context_only && !st(i).described.captured && !st(i).outside_range) judge_legacy_stream(i);
    }
    std::stable_sort(findings_.begin() + static_cast<std::ptrdiff_t>(first), findings_.end(),
                     [](const Finding& x, const Finding& y) { return x.call < y.call; });
  }

 private:
  const CallState& st(size_t ci) const { return a_.state(ci); }
  const rules::Prediction& predicted(size_t ci) const { return st(ci).predicted; }

  bool mark_within(MarkKind kind, const ApiCall& c) const {
    auto it = std::lower_bound(marks_.begin(), marks_.end(), c.start_ns,
                               [](const Mark& m, uint64_t t) { return m.time_ns < t; });
    for (; it != marks_.end() && it->time_ns <= c.end_ns; ++it) {
      if (it->kind == kind) return true;
    }
    return false;
  }

  // The op in `self`'s stream that ended last at or before `self` started (the first in start order among equal
  // ends), -1 if none.
  int64_t previous_in_stream(size_t self) const { return idx_->previous(self); }

  // What op `oi` waited for when it started late: of the work it had to follow, what ended last, within the clock
  // skew allowed, before it began: the previous op in its stream, or work of the other side across the legacy
  // default stream and blocking streams (each waits for the other's work enqueued before it). -1 if none.
  int64_t released_by(size_t oi) const {
    const GpuOp& op = log_.ops[oi];
    int64_t best = -1;
    const int64_t prev = previous_in_stream(oi);
    if (prev >= 0 && log_.ops[static_cast<size_t>(prev)].end_ns + opt_.gpu_gap_ns >= op.start_ns) best = prev;
    // Across streams only where both kinds are known (a handle created before we attached may be non-blocking), and
    // for work enqueued before the call that enqueued `oi` began.
    const StreamKind kind = idx_->op_stream_kind[oi];
    const int64_t producer = idx_->corr.producer(oi);
    const bool may_wait_across =
        waits_across(kind, StreamKind::LegacyDefault) || waits_across(kind, StreamKind::Blocking);
    if (producer < 0 || !may_wait_across) return best;
    const uint64_t began = log_.calls[static_cast<size_t>(producer)].start_ns;
    for (const size_t xi : ops_ending_just_before(op.start_ns)) {
      const GpuOp& x = log_.ops[xi];
      if (xi == oi || x.start_ns == 0 || x.stream_id == op.stream_id) continue;
      if (x.device != op.device || x.context != op.context) continue;  // the rule holds within a context
      if (!waits_across(kind, idx_->op_stream_kind[xi])) continue;
      if (idx_->enqueue_ns[xi] == 0 || idx_->enqueue_ns[xi] > began) continue;  // not enqueued before it
      if (best < 0 || x.end_ns > log_.ops[static_cast<size_t>(best)].end_ns) best = static_cast<int64_t>(xi);
    }
    return best;
  }

  // The work ops that ended at most the clock skew allowed before `t`, and not after it, in the order they ended.
  std::span<const size_t> ops_ending_just_before(uint64_t t) const {
    const std::vector<size_t>& by_end = idx_->ops_by_end();
    const uint64_t from = t > opt_.gpu_gap_ns ? t - opt_.gpu_gap_ns : 0;
    const auto first = std::lower_bound(by_end.begin(), by_end.end(), from,
                                        [&](size_t x, uint64_t u) { return log_.ops[x].end_ns < u; });
    const auto last =
        std::upper_bound(first, by_end.end(), t, [&](uint64_t u, size_t x) { return u < log_.ops[x].end_ns; });
    return {first, last};
  }

  // Whether work in a stream of kind `a` waits for work of another stream of kind `b` enqueued before it, by the
  // legacy default stream's rule; known kinds only.
  static bool waits_across(StreamKind a, StreamKind b) {
    auto blocking = [](StreamKind k) { return k == StreamKind::Blocking || k == StreamKind::PerThreadDefault; };
    return (a == StreamKind::LegacyDefault && blocking(b)) || (blocking(a) && b == StreamKind::LegacyDefault);
  }

  // What held up op `oi` (the work call `c` is said to have waited for) once `c` had begun: the chain of what
  // released it (released_by), then what released that, back to the call's start. Each link holds the part of the
  // wait it ran (since the call began): each started as the one before it ended, so idle time that no link explains
  // is nobody's. When the links of other streams ran longer than those of `oi`'s own stream, the longest of them is
  // what held it up (simpleHyperQ: a copy behind a 1.5 us kernel on the legacy stream that waited 59.6 ms for the
  // blocking streams' kernels waited for those); else its own stream's work did.
  struct HeldUp {
    int64_t own_first = -1;      // the first link in `oi`'s stream
    int64_t other_longest = -1;  // the link of another stream that ran longest
    bool other_held_more = false;
  };
  HeldUp held_up(size_t oi, const ApiCall& c) const {
    HeldUp h;
    const uint32_t stream = log_.ops[oi].stream_id;
    uint64_t own_part = 0, other_part = 0, longest = 0;
    size_t at = oi;
    for (int links = 0; links < kMaxLinks; ++links) {
      if (log_.ops[at].start_ns <= c.start_ns + opt_.gpu_gap_ns) break;  // running when the call began
      const int64_t prev = released_by(at);
      if (prev < 0 || log_.ops[static_cast<size_t>(prev)].end_ns <= c.start_ns) break;
      const GpuOp& x = log_.ops[static_cast<size_t>(prev)];
      const uint64_t part = x.end_ns - std::max(x.start_ns, c.start_ns);
      if (x.stream_id == stream) {
        own_part += part;
        if (h.own_first < 0) h.own_first = prev;
      } else {
        other_part += part;
        if (h.other_longest < 0 || part > longest) {
          h.other_longest = prev;
          longest = part;
        }
      }
      at = static_cast<size_t>(prev);
    }
    h.other_held_more = h.other_longest >= 0 && other_part > own_part;
    return h;
  }

  // What call `ci` can wait for (analyze.h: WaitScope), from its documented behaviour.
  struct Scope {
    WaitScope kind = WaitScope::Device;
    const StreamAnchor* anchor = nullptr;  // whose stream it is: the call's own, or the last record of its event
    uint64_t enqueued_by = 0;  // work enqueued after this (the anchor's call returned later) is not waited for
    bool own_kernels = false;  // its own kernels are awaited too (CUDA_LAUNCH_BLOCKING=1)
  };

  Scope scope_of(size_t ci) const {
    const ApiCall& c = log_.calls[ci];
    const CallState& s0 = st(ci);
    const rules::Prediction& p = s0.predicted;
    Scope s;
    s.anchor = &s0.self;
    s.enqueued_by = c.start_ns;
    switch (s0.described.api) {
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
        break;                    // a first launch: loading a module may synchronize the whole context
      case ApiKind::GraphLaunch:  // a pageable memcpy node: it waits for its stream, up to that node
        if (p.may_hold_host()) s.kind = WaitScope::Stream;
        break;
      case ApiKind::StreamSynchronize: s.kind = WaitScope::Stream; break;
      case ApiKind::EventSynchronize:
        if (s0.event_anchored) {  // the stream the event was last recorded in, up to that record
          s.kind = WaitScope::Stream;
          s.anchor = &s0.anchor;
          s.enqueued_by = s0.anchor.end_ns;
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
    const StreamAnchor& a = *s.anchor;
    if (a.stream_id != UINT32_MAX && op.stream_id == a.stream_id) return true;
    const int64_t p = idx_->corr.producer(oi);
    // Work no watched call enqueued: in its stream only when the stream is not known (legacy: on a blocking one).
    if (p < 0) {
      return !strict &&
             (a.stream_id == UINT32_MAX || (a.kind == StreamKind::LegacyDefault && op.stream_id != kMigrationStream));
    }
    const auto& producer = log_.calls[static_cast<size_t>(p)];
    const StreamKind pk = st(static_cast<size_t>(p)).described.stream;
    if (a.kind == StreamKind::LegacyDefault && !strict && blocking_kind(pk)) return true;
    if (pk != a.kind) return false;
    if (a.kind == StreamKind::LegacyDefault) return true;
    if (a.kind == StreamKind::PerThreadDefault) return producer.thread == a.thread;
    return producer.stream == a.stream;
  }

  // Per call, work in its scope that was enqueued before it began, in flight then, and still running when it
  // returned (Evidence::running_op): a call that waits for its whole scope cannot return before that work ends,
  // so it did not wait. Only for calls a rule says wait (a call no rule describes may wait for part of its scope: a
  // launch on a full queue waits for one slot). One sweep over the calls by start.
  void find_running_work(const std::vector<size_t>& judged) {
    running_.clear();
    std::vector<size_t> order;
    for (size_t ci : judged) {
      const ApiCall& c = log_.calls[ci];
      if (predicted(ci).may_hold_host() && c.end_ns - c.start_ns >= opt_.threshold_ns) order.push_back(ci);
    }
    if (order.empty()) return;  // most chunks of a launch loop: no call to check
    std::vector<size_t> by_enqueue;
    for (size_t i = 0; i < log_.ops.size(); ++i) {
      if (log_.ops[i].kind != GpuOpKind::Sync && idx_->enqueue_ns[i] != 0) by_enqueue.push_back(i);
    }
    std::stable_sort(by_enqueue.begin(), by_enqueue.end(),
                     [&](size_t a, size_t b) { return idx_->enqueue_ns[a] < idx_->enqueue_ns[b]; });
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return log_.calls[a].start_ns < log_.calls[b].start_ns; });
    std::unordered_map<uint32_t, size_t> latest;  // per stream: of the work enqueued so far, the op that ends last
    size_t next = 0;
    for (size_t ci : order) {
      const ApiCall& c = log_.calls[ci];
      for (; next < by_enqueue.size() && idx_->enqueue_ns[by_enqueue[next]] <= c.start_ns; ++next) {
        const size_t oi = by_enqueue[next];
        auto [it, fresh] = latest.try_emplace(log_.ops[oi].stream_id, oi);
        if (!fresh && log_.ops[oi].end_ns > log_.ops[it->second].end_ns) it->second = oi;
      }
      // Work that ended before this call began ended before every later one began too.
      for (auto it = latest.begin(); it != latest.end();) {
        it = log_.ops[it->second].end_ns <= c.start_ns ? latest.erase(it) : std::next(it);
      }
      const Scope s = scope_of(ci);
      if (s.kind == WaitScope::None) continue;
      for (const auto& [stream, oi] : latest) {
        const GpuOp& op = log_.ops[oi];
        if (op.start_ns == 0 || op.end_ns <= c.end_ns + opt_.release_window_ns) continue;
        if (idx_->enqueue_ns[oi] > s.enqueued_by || !in_scope(ci, s, oi, /*strict=*/true)) continue;
        auto [r, fresh] = running_.try_emplace(ci, static_cast<int64_t>(oi));
        if (!fresh && op.end_ns > log_.ops[static_cast<size_t>(r->second)].end_ns) r->second = static_cast<int64_t>(oi);
      }
    }
  }

  int64_t running_op(size_t ci) const {
    auto it = running_.find(ci);
    return it == running_.end() ? -1 : it->second;
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
    ev.running_op = running_op(ci);
    const bool waited_for_scope = ev.running_op < 0;  // else only its own transfer can have held it
    // Its own transfer, if a rule says the call does it before returning: held for as long as the transfer ran
    // while it held the host, however late the DMA of the last staged chunk ends (behind other processes' copies
    // on a shared GPU). Otherwise its own transfer only if it began before and ended by its return (gpu_gap_ns of
    // clock skew allowed).
    const bool does_own_transfer = predicted(ci).may_hold_host();
    auto effective_end = [&](const GpuOp& op) { return std::min(op.end_ns, c.end_ns); };
    int64_t best = -1;
    for (size_t oi : idx_->corr.ops_of(ci)) {
      const GpuOp& op = log_.ops[oi];
      if (op.start_ns == 0 || op.end_ns <= c.start_ns || op.start_ns >= c.end_ns || !in_scope(ci, s, oi, false))
        continue;
      // A call no rule says does its transfer before returning waited for it only if it ended by the return.
      if (!does_own_transfer && op.end_ns > c.end_ns + opt_.gpu_gap_ns) continue;
      if (best < 0 || effective_end(op) > effective_end(log_.ops[static_cast<size_t>(best)]))
        best = static_cast<int64_t>(oi);
    }
    // Else the last work in its scope to end while it held the host, enqueued before it began.
    const uint64_t hi = c.end_ns + opt_.gpu_gap_ns;
    const std::vector<size_t>& by_end = idx_->ops_by_end();
    auto first = std::upper_bound(by_end.begin(), by_end.end(), c.start_ns,
                                  [&](uint64_t t, size_t oi) { return t < log_.ops[oi].end_ns; });
    // A call no rule says waits may have waited for part of its scope only (a launch on a full queue waits for one
    // slot): of the work that ended within the clock skew allowed around its return, what ended by the return let it
    // go, in its own stream first, and what ended after was still running behind it. Work that ended earlier than the
    // skew allows is no such witness: it would turn the time since into the call's own cost.
    const bool partial = !predicted(ci).may_hold_host();
    const uint32_t own_stream = st(ci).own_stream;
    int64_t other = -1, by_return = -1, by_return_own = -1;
    if (waited_for_scope && s.kind != WaitScope::None) {
      for (auto it = first; it != by_end.end() && log_.ops[*it].end_ns <= hi; ++it) {
        const size_t oi = *it;
        const GpuOp& op = log_.ops[oi];
        if (op.start_ns == 0 || is_own(op, c)) continue;  // untimed work proves nothing; own work: above
        if (op.start_ns >= c.end_ns) continue;            // began after the call returned: it let nothing go
        if (other >= 0 && op.end_ns == log_.ops[static_cast<size_t>(other)].end_ns) continue;  // ties: the first
        if (idx_->enqueue_ns[oi] > s.enqueued_by || !in_scope(ci, s, oi, false)) continue;
        other = static_cast<int64_t>(oi);
        if (partial && op.end_ns <= c.end_ns && op.end_ns + opt_.gpu_gap_ns >= c.end_ns) {
          by_return = other;
          if (op.stream_id == own_stream) by_return_own = other;
        }
      }
    }
    if (by_return_own >= 0) {
      other = by_return_own;
    } else if (by_return >= 0) {
      other = by_return;
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
    const uint32_t own = s.anchor->stream_id;
    if (is_own(op, c)) {
      ev.by = ReleasedBy::OwnWork;
      // Did its own work have to wait for other work before it could start: earlier work in its stream, or work
      // across the legacy default stream and blocking streams (held_up: also behind earlier work of its stream
      // that itself waited for it)?
      if (op.start_ns > c.start_ns + opt_.gpu_gap_ns) {
        const HeldUp h = held_up(static_cast<size_t>(best), c);
        ev.behind_op = h.other_held_more || h.own_first < 0 ? h.other_longest : h.own_first;
        // Nothing held it back: the time before its transfer began was the call's own (setting the copy up,
        // staging its first chunk), and only the transfer is waited for.
        if (ev.behind_op < 0) waited = std::min(op.end_ns, c.end_ns) - std::max(op.start_ns, c.start_ns);
      }
    } else if ((s.kind == WaitScope::Stream &&
                ((own != UINT32_MAX && op.stream_id == own) || in_scope(ci, s, static_cast<size_t>(best), true))) ||
               (s.kind == WaitScope::Device && st(ci).own_stream != UINT32_MAX && op.stream_id == st(ci).own_stream)) {
      ev.by = ReleasedBy::EarlierWorkSameStream;
      const HeldUp h = held_up(static_cast<size_t>(best), c);
      if (h.other_held_more) ev.behind_op = h.other_longest;
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
    const rules::Prediction& p = predicted(ci);
    const uint64_t held = c.end_ns - c.start_ns;
    const bool documented = p.may_hold_host();
    // Neither a wait past the threshold nor a cost past the cost threshold is possible.
    if (held < std::min(opt_.threshold_ns, opt_.cost_threshold_ns) && !documented) return;
    Finding f;
    f.call = ci;
    f.held_ns = held;
    f.predicted = p.host_rule;
    f.predicted_behavior = p.host;
    f.evidence = attribute(ci, f.waited_ns);
    f.own_ns = held - f.waited_ns;
    if (f.evidence.by == ReleasedBy::ContextCreation) {
      counts_.context_creation_ns += held;  // the first call of the process pays for the context: not a sync issue
      if (documented) ++counts_.not_observed[p.host_rule];
      return;
    }
    if (f.waited_ns >= opt_.threshold_ns) {
      if (documented) {
        f.verdict = Verdict::DocumentedObserved;
        f.rule = p.host_rule;
      } else if (c.call.api == ApiKind::KernelLaunch && mark_within(MarkKind::ModuleLoaded, c)) {
        f.verdict =
            Verdict::DocumentedObserved;  // lazy loading of a function we had seen launched through another path
        f.rule = rules::RuleId::FirstLaunchLazyLoading;
      } else {
        f.verdict = Verdict::ObservedUndocumented;
        f.rule = rules::RuleId::UndocumentedBlock;
      }
    } else {
      if (documented) ++counts_.not_observed[p.host_rule];  // it did not wait as the rule says it may
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
    if (st(ci).note) f.note = *st(ci).note;
    findings_.push_back(std::move(f));
  }

  // How long `op` started after it could have: after its enqueue and after the previous op in its own stream.
  uint64_t held_back(size_t oi) const {
    const GpuOp& op = log_.ops[oi];
    uint64_t ready = idx_->enqueue_ns[oi];
    int64_t prev = previous_in_stream(oi);
    if (prev >= 0) ready = std::max(ready, log_.ops[static_cast<size_t>(prev)].end_ns);
    return op.start_ns > ready ? op.start_ns - ready : 0;
  }

  // GPU-side effect of a legacy-stream command: it waited for work in blocking streams (delay in) and work in
  // blocking streams waited for it (delay out). Measured from the activity timestamps.
  void judge_legacy_stream(size_t ci) {
    const rules::Prediction& p = predicted(ci);
    if (p.gpu != rules::GpuEffect::SerializesWithBlockingStreams) return;
    const int64_t first = first_work_op(idx_->corr.ops_of(ci), log_.ops);
    if (first < 0) {
      ++counts_.not_observed[rules::RuleId::LegacyStreamSerialization];
      return;
    }
    const auto li = static_cast<size_t>(first);
    const GpuOp& legacy = log_.ops[li];
    Finding f;
    f.call = ci;
    f.held_ns = log_.calls[ci].end_ns - log_.calls[ci].start_ns;
    f.predicted = p.host_rule;
    f.predicted_behavior = p.host;
    f.rule = rules::RuleId::LegacyStreamSerialization;
    f.level = rules::rule(f.rule).level;
    f.verdict = Verdict::DocumentedObserved;
    uint64_t delay_in = 0, delay_out = 0;
    // Delay in: the legacy op started late, right after work in another blocking stream ended.
    const uint64_t in = held_back(li);
    if (in > opt_.gpu_gap_ns) {
      for (const size_t oi : ops_ending_just_before(legacy.start_ns)) {
        const GpuOp& x = log_.ops[oi];
        if (oi == li || x.stream_id == legacy.stream_id || !blocking_kind(idx_->op_stream_kind[oi])) continue;
        delay_in = in;
        f.evidence.op = static_cast<int64_t>(oi);
        f.evidence.by = ReleasedBy::OtherStreamWork;
      }
    }
    // Delay out: work in other blocking streams, enqueued before the legacy op ended, started only when it ended.
    for (size_t oi = 0; oi < log_.ops.size(); ++oi) {
      const GpuOp& y = log_.ops[oi];
      if (y.kind == GpuOpKind::Sync || y.stream_id == legacy.stream_id || !blocking_kind(idx_->op_stream_kind[oi]))
        continue;
      if (idx_->enqueue_ns[oi] == 0 || idx_->enqueue_ns[oi] >= legacy.end_ns) continue;
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
      ++counts_.not_observed[rules::RuleId::LegacyStreamSerialization];
      return;
    }
    f.evidence.by = ReleasedBy::OtherStreamWork;
    findings_.push_back(std::move(f));
  }

  const EventLog& log_;
  const Analyzer& a_;
  const AnalysisOptions& opt_;
  Analysis& counts_;
  std::vector<Finding>& findings_;
  const Analyzer::Index* idx_ = nullptr;
  std::vector<Mark> marks_;                      // log_.marks by time
  std::unordered_map<size_t, int64_t> running_;  // per judged call: find_running_work()
};

}  // namespace

static StreamKind stream_kind_of(const ApiCall& c, const std::unordered_map<uint64_t, StreamKind>& streams) {
  const StreamKind named = rules::default_stream_named(c.call, c.stream);
  if (named != StreamKind::Unknown) return named;
  auto it = streams.find(c.stream);
  return it == streams.end() ? StreamKind::Unknown : it->second;
}

void Analyzer::step(const EventLog& log, uint64_t describe_before, uint64_t judge_before,
                    std::vector<Finding>& findings) {
  calls_.resize(log.calls.size());
  log_of_step_ = &log;
  idx_->build(log);
  Index& idx = *idx_;
  const size_t from = described_;
  while (described_ < log.calls.size() && log.calls[described_].start_ns < describe_before &&
         !awaits_record(described_, describe_before, idx)) {
    describe(described_++, idx);
  }
  mark_pending_blocking_work(from, described_, idx);
  for (size_t i = from; i < described_; ++i) calls_[i].predicted = rules::predict(calls_[i].described);
  for (size_t i = 0; i < log.ops.size(); ++i) {  // the stream kinds of ops, now that their calls are described
    const int64_t c = idx.corr.producer(i);
    if (c >= 0 && static_cast<size_t>(c) < described_)
      idx.op_stream_kind[i] = calls_[static_cast<size_t>(c)].described.stream;
  }
  // A legacy-stream command's delay out is read from blocking-stream work that started when its own work ended:
  // it waits for the records of work enqueued before then (the earliest call still waiting for its record).
  uint64_t awaited_end = UINT64_MAX;
  if (judge_before != UINT64_MAX) {
    for (size_t i = 0; i < log.calls.size(); ++i) {
      const ApiCall& c = log.calls[i];
      if (c.end_ns >= awaited_end || !expects_work_record(c) || !idx.corr.ops_of(i).empty()) continue;
      if ((i < described_ && calls_[i].described.captured) || judge_before >= c.end_ns + kRecordOverdueNs) continue;
      awaited_end = c.end_ns;
    }
  }
  // And for the calls that enqueued the work around its own described (their stream kinds).
  const uint64_t frontier =
      described_ < log.calls.size() ? std::min(describe_before, log.calls[described_].start_ns) : describe_before;
  auto settled = [&](size_t i) {
    if (calls_[i].predicted.gpu != rules::GpuEffect::SerializesWithBlockingStreams || judge_before == UINT64_MAX)
      return true;
    const int64_t own = first_work_op(idx.corr.ops_of(i), log.ops);
    if (own < 0) return true;  // no work: not observed, whatever comes
    const uint64_t end = log.ops[static_cast<size_t>(own)].end_ns;
    return end < awaited_end && end + opt_.gpu_gap_ns < frontier;
  };
  std::vector<size_t> judged;
  for (size_t i = 0; i < described_; ++i) {
    if (!calls_[i].judged && log.calls[i].end_ns < judge_before && settled(i)) {
      calls_[i].judged = true;
      judged.push_back(i);
    }
  }
  if (judged.empty()) return;
  Judge(log, *this, opt_, counts_, findings).run(idx, judged);
}

// A call is described with its own work's records (its stream, the memory kinds they confirm), and later calls only
// after it: one that enqueued work whose record has not come waits, unless it was captured into a graph (a record
// comes only when the graph is launched) or the record is kRecordOverdueNs late (lost: awaited_records.h).
bool Analyzer::awaits_record(size_t ci, uint64_t now_ns, const Index& idx) const {
  const EventLog& log = *log_of_step_;
  const ApiCall& c = log.calls[ci];
  if (!expects_work_record(c) || now_ns == UINT64_MAX || now_ns >= c.end_ns + kRecordOverdueNs) return false;
  if (!idx.corr.ops_of(ci).empty()) return gets_several_records(c) && !drained_after(ci, now_ns, idx);
  rules::CallDescription d = c.call;
  if (rules::traits(d.api).takes_stream || rules::uses_implicit_default_stream(d))
    d.stream = stream_kind_of(c, state_.streams);
  return !state_.capture.captures(c, d);
}

// A call whose work comes in several records (a graph launch: one per node) has all of them once its stream is known
// to have drained: later work on the same stream handle started (stream order), or a device synchronize, or a
// synchronize of that stream, begun after it returned, returned before `now_ns` (everything that ended before now
// has come).
bool Analyzer::drained_after(size_t ci, uint64_t now_ns, const Index& idx) const {
  const EventLog& log = *log_of_step_;
  const ApiCall& c = log.calls[ci];
  for (size_t j = ci + 1; j < log.calls.size(); ++j) {
    const ApiCall& x = log.calls[j];
    if (x.start_ns < c.end_ns || x.result != 0) continue;
    const bool same_stream = x.stream == c.stream && x.thread == c.thread;
    if ((x.call.api == ApiKind::DeviceSynchronize || (same_stream && x.call.api == ApiKind::StreamSynchronize)) &&
        x.end_ns < now_ns) {
      return true;
    }
    if (!same_stream) continue;
    for (size_t oi : idx.corr.ops_of(j)) {
      if (log.ops[oi].start_ns != 0) return true;
    }
  }
  return false;
}

void Analyzer::retain(const std::vector<char>& keep) {
  size_t out = 0, described = 0;
  for (size_t i = 0; i < calls_.size(); ++i) {
    if (!keep[i]) continue;
    if (i < described_) ++described;
    if (out != i) calls_[out] = std::move(calls_[i]);
    ++out;
  }
  calls_.resize(out);
  described_ = described;
}

void Analyzer::release_index() { idx_ = std::make_unique<Index>(); }

// Completes call `ci`'s description in program order: stream kinds from the streams created so far, whether it was
// captured into a graph, event wait modes, stream-ordered pointers, first launches, memory kinds confirmed by the
// activity records; and the stream its scope is measured on.
void Analyzer::describe(size_t ci, const Index& idx) {
  const EventLog& log = *log_of_step_;
  const ApiCall& c = log.calls[ci];
  CallState& s = calls_[ci];
  rules::CallDescription d = c.call;
  d.env = env_;
  if (rules::traits(d.api).takes_stream || rules::uses_implicit_default_stream(d))
    d.stream = stream_kind_of(c, state_.streams);
  d.captured = false;  // ours to decide, from the capture calls before it
  state_.capture.observe(c, d);
  // The CUPTI stream its stream argument names: its own work's, or else that of the latest earlier call on the same
  // handle (the same thread's, for a per-thread default stream) that enqueued work. A stream or event synchronize
  // enqueues nothing of its own; unknown when no work on that stream was seen before it.
  const int64_t first = first_work_op(idx.corr.ops_of(ci), log.ops);
  s.own_stream = first < 0 ? UINT32_MAX : log.ops[static_cast<size_t>(first)].stream_id;
  const auto key = std::make_tuple(
      d.stream, d.stream == StreamKind::LegacyDefault || d.stream == StreamKind::PerThreadDefault ? 0 : c.stream,
      d.stream == StreamKind::PerThreadDefault ? c.thread : 0u);
  uint32_t anchor_stream = UINT32_MAX;
  if (s.own_stream != UINT32_MAX) {
    state_.seen[key] = s.own_stream;
    anchor_stream = s.own_stream;
  } else if (auto it = state_.seen.find(key); it != state_.seen.end()) {
    anchor_stream = it->second;
  }
  s.self = StreamAnchor{anchor_stream, d.stream, c.thread, c.stream, c.end_ns};
  // The bracket itself is not judged either: cudaProfilerStop may flush, and it is not the code under check.
  const bool bracket = d.api == ApiKind::ProfilerStart || d.api == ApiKind::ProfilerStop;
  s.outside_range = (opt_.profiler_range && (bracket || !state_.profiler_on)) ||
                    (opt_.in_nvtx_range && !opt_.in_nvtx_range(c.nvtx_range));
  switch (d.api) {
    case ApiKind::ProfilerStart: state_.profiler_on = true; break;
    case ApiKind::ProfilerStop: state_.profiler_on = false; break;
    case ApiKind::StreamCreate:
      state_.streams[c.handle] = (c.flags & kStreamNonBlockingFlag) ? StreamKind::NonBlocking : StreamKind::Blocking;
      break;
    case ApiKind::StreamDestroy:
      state_.streams.erase(c.handle);
      for (auto it = state_.seen.begin(); it != state_.seen.end();) {
        it = std::get<1>(it->first) == c.handle ? state_.seen.erase(it) : std::next(it);
      }
      break;
    case ApiKind::EventCreate:
      state_.events[c.handle] = (c.flags & kBlockingSyncFlag) ? rules::WaitMode::BlockingSync : rules::WaitMode::Auto;
      break;
    case ApiKind::EventSynchronize: {
      auto it = state_.events.find(c.handle);
      if (it != state_.events.end()) d.wait_mode = it->second;
      auto r = state_.recorded.find(c.handle);
      if (r != state_.recorded.end()) {
        s.event_anchored = true;
        s.anchor = r->second;
      }
      break;
    }
    case ApiKind::EventRecord:
      if (c.result == 0) state_.recorded[c.handle] = s.self;
      break;
    case ApiKind::StreamOrderedAlloc: state_.stream_ordered.insert(c.handle); break;
    case ApiKind::StreamOrderedFree: state_.stream_ordered.erase(c.handle); break;
    case ApiKind::Free: d.stream_ordered_pointer = state_.stream_ordered.erase(c.handle) > 0; break;
    case ApiKind::KernelLaunch: d.first_launch = state_.launched.insert(c.function).second; break;
    case ApiKind::GraphLaunch:
      for (size_t oi : idx.corr.ops_of(ci)) {
        const GpuOp& op = log.ops[oi];
        d.pageable_copy_node =
            d.pageable_copy_node ||
            (op.kind == GpuOpKind::Memcpy && (memory_kind_from_activity(op.src_kind) == MemoryKind::Pageable ||
                                              memory_kind_from_activity(op.dst_kind) == MemoryKind::Pageable));
      }
      break;
    case ApiKind::Copy:
    case ApiKind::Memset: confirm_memory_kinds(ci, d, idx); break;
    default: break;
  }
  s.described = d;
  s.is_described = true;
}

// The activity record of a copy carries the driver's own view of each side's memory kind; it wins over our
// registry (which cannot see memory pinned before we attached or by an API we do not watch).
void Analyzer::confirm_memory_kinds(size_t ci, rules::CallDescription& d, const Index& idx) {
  const EventLog& log = *log_of_step_;
  const ApiCall& c = log.calls[ci];
  for (size_t oi : idx.corr.ops_of(ci)) {
    const GpuOp& op = log.ops[oi];
    if (op.kind != GpuOpKind::Memcpy) continue;
    MemoryKind src = memory_kind_from_activity(op.src_kind), dst = memory_kind_from_activity(op.dst_kind);
    if ((src != MemoryKind::Unknown && src != d.src) || (dst != MemoryKind::Unknown && dst != d.dst)) {
      if ((d.src != MemoryKind::Unknown || d.dst != MemoryKind::Unknown) && !c.context_only) {
        calls_[ci].note = std::make_unique<std::string>(
            "activity record says " + std::string(name_of(src)) + " -> " + std::string(name_of(dst)) +
            ", the call looked like " + std::string(name_of(d.src)) + " -> " + std::string(name_of(d.dst)));
        ++counts_.kind_disagreements;
      }
      if (src != MemoryKind::Unknown) d.src = src;
      if (dst != MemoryKind::Unknown) d.dst = dst;
    }
    return;
  }
}

// blocking_streams_pending: at the call's entry, some blocking stream other than the call's own holds work that
// was enqueued earlier and has not finished. Measured from the activity records (the ground truth); one sweep over
// the calls described in this step, [from, to).
void Analyzer::mark_pending_blocking_work(size_t from, size_t to, const Index& idx) {
  if (from == to) return;
  const EventLog& log = *log_of_step_;
  std::vector<size_t> blocking_ops;
  for (size_t i = 0; i < log.ops.size(); ++i) {
    if (log.ops[i].kind == GpuOpKind::Sync || idx.enqueue_ns[i] == 0) continue;
    const auto c = static_cast<size_t>(idx.corr.producer(i));  // enqueue_ns != 0: it has one
    if (c >= to) continue;                                     // enqueued after every call described here began
    const rules::CallDescription& d = calls_[c].described;
    if (blocking_kind(d.stream) && rules::traits(d.api).takes_stream) blocking_ops.push_back(i);
  }
  if (blocking_ops.empty()) {  // no blocking stream's work in flight (a loop on non-blocking streams)
    for (size_t ci = from; ci < to; ++ci) calls_[ci].described.blocking_streams_pending = false;
    return;
  }
  std::sort(blocking_ops.begin(), blocking_ops.end(),
            [&](size_t a, size_t b) { return idx.enqueue_ns[a] < idx.enqueue_ns[b]; });
  std::unordered_map<uint32_t, uint64_t> latest_end;  // per blocking stream: the latest end enqueued so far
  size_t next = 0;
  for (size_t ci = from; ci < to; ++ci) {  // the window's calls are in start order
    const ApiCall& c = log.calls[ci];
    for (; next < blocking_ops.size() && idx.enqueue_ns[blocking_ops[next]] <= c.start_ns; ++next) {
      const GpuOp& op = log.ops[blocking_ops[next]];
      uint64_t& end = latest_end[op.stream_id];
      end = std::max(end, op.end_ns);
    }
    const uint32_t own = calls_[ci].own_stream;
    bool pending = false;
    for (const auto& [stream, end] : latest_end) pending = pending || (stream != own && end > c.start_ns);
    calls_[ci].described.blocking_streams_pending = pending;
  }
}

AnalysisOptions analysis_options(const EventLog& log) {
  AnalysisOptions o;
  o.threshold_ns = log.run.threshold_ns;
  o.cost_threshold_ns = log.run.cost_threshold_ns;
  const CaptureRange range = parse_capture_range(log.run.capture_range).value_or(CaptureRange{});
  o.profiler_range = range.kind == CaptureRange::Kind::ProfilerApi;
  o.in_nvtx_range = nvtx_range_test(range, [ranges = log.nvtx_ranges](uint32_t id) {
    return id > 0 && id <= ranges.size() ? ranges[id - 1] : NvtxRange{};
  });
  return o;
}

// A run analyzed as it went: its judgements, as they were made.
static Analysis judged_already(const EventLog& log) {
  Analysis out;
  out.findings = log.findings;
  out.not_observed = log.carried.not_observed;
  out.context_creation_ns = log.carried.context_creation_ns;
  out.kind_disagreements = log.carried.kind_disagreements;
  out.captured_calls = log.carried.captured_calls;
  out.outside_range_calls = log.carried.outside_range_calls;
  out.calls_watched = log.calls.size() + log.carried.calls;
  for (const ApiCall& c : log.calls) {
    out.described.push_back(c.call);
    out.predicted.emplace_back();
  }
  for (const Finding& f : log.findings) {
    out.predicted[f.call].host_rule = f.predicted;
    out.predicted[f.call].host = f.predicted_behavior;
  }
  return out;
}

Analysis analyze(const EventLog& log, const AnalysisOptions& options) {
  if (log.analyzed) return judged_already(log);
  Analyzer a(options, log.run.env);
  a.counts().calls_watched = log.calls.size() + log.carried.calls;
  a.counts().not_observed = log.carried.not_observed;
  a.counts().context_creation_ns = log.carried.context_creation_ns;
  a.counts().kind_disagreements = log.carried.kind_disagreements;
  a.counts().captured_calls = log.carried.captured_calls;
  a.counts().outside_range_calls = log.carried.outside_range_calls;
  Analysis out;
  a.step(log, UINT64_MAX, UINT64_MAX, out.findings);
  Analysis& counts = a.counts();
  out.not_observed = std::move(counts.not_observed);
  out.context_creation_ns = counts.context_creation_ns;
  out.calls_watched = counts.calls_watched;
  out.captured_calls = counts.captured_calls;
  out.outside_range_calls = counts.outside_range_calls;
  out.kind_disagreements = counts.kind_disagreements;
  out.described.reserve(log.calls.size());
  out.predicted.reserve(log.calls.size());
  for (size_t i = 0; i < log.calls.size(); ++i) {
    out.described.push_back(a.state(i).described);
    out.predicted.push_back(a.state(i).predicted);
  }
  return out;
}

bool compacted(const EventLog& log) {
  // Calls and work only counted (shed when the analysis fell behind) were never analyzed: they change nothing.
  const Carried& k = log.carried;
  if (log.analyzed || !k.findings.empty() || !k.not_observed.empty() || k.context_creation_ns != 0 ||
      k.kind_disagreements != 0 || k.captured_calls != 0 || k.outside_range_calls != 0) {
    return true;
  }
  return std::any_of(log.calls.begin(), log.calls.end(), [](const ApiCall& c) { return c.context_only; });
}

bool blocking_kind(StreamKind k) {
  // Unknown handles were created before we attached or by a path we do not watch: cudaStreamCreate's default is
  // blocking.
  return k == StreamKind::Blocking || k == StreamKind::PerThreadDefault || k == StreamKind::Unknown;
}

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
    case 3:
    case 6: return MemoryKind::Device;
    case 4: return MemoryKind::Array;
    case 5:
    case 7: return MemoryKind::Managed;
    default: return MemoryKind::Unknown;
  }
}

}  // namespace asynccheck
