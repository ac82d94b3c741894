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

bool takes_stream(ApiKind api) {
  switch (api) {
    case ApiKind::Copy:
    case ApiKind::Memset:
    case ApiKind::KernelLaunch:
    case ApiKind::GraphLaunch:
    case ApiKind::StreamSynchronize:
    case ApiKind::StreamQuery:
    case ApiKind::StreamWaitEvent:
    case ApiKind::EventRecord:
    case ApiKind::StreamOrderedAlloc:
    case ApiKind::StreamOrderedFree:
    case ApiKind::CaptureBegin:
    case ApiKind::CaptureEnd:
      return true;
    default:
      return false;
  }
}


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
    describe_calls();
    for (size_t i = 0; i < log_.calls.size(); ++i) {
      out_.predicted.push_back(rules::predict(out_.described[i]));
    }
    index_op_streams();
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
    std::stable_sort(idx_.ops_by_end.begin(), idx_.ops_by_end.end(),
              [&](size_t a, size_t b) { return log_.ops[a].end_ns < log_.ops[b].end_ns; });
  }

  StreamKind stream_kind_of(const ApiCall& c, const std::unordered_map<uint64_t, StreamKind>& streams) const {
    const rules::CallDescription& d = c.call;
    if (rules::uses_implicit_default_stream(d) || c.stream == 0) return d.per_thread_variant ? StreamKind::PerThreadDefault : StreamKind::LegacyDefault;
    if (c.stream == kStreamLegacyHandle) return StreamKind::LegacyDefault;
    if (c.stream == kStreamPerThreadHandle) return StreamKind::PerThreadDefault;
    auto it = streams.find(c.stream);
    return it == streams.end() ? StreamKind::Unknown : it->second;
  }

  // Completes each call's description in program order: stream kinds from the streams created so far, whether
  // it was captured into a graph, event wait modes, stream-ordered pointers, first launches, memory kinds confirmed
  // by the activity records.
  void describe_calls() {
    std::unordered_map<uint64_t, StreamKind> streams;
    std::unordered_map<uint64_t, rules::WaitMode> events;
    std::unordered_set<uint64_t> stream_ordered, launched;
    CaptureTracker capture;
    for (const ApiCall& c : log_.calls) {
      rules::CallDescription d = c.call;
      d.env = log_.run.env;
      if (takes_stream(d.api)) d.stream = stream_kind_of(c, streams);
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
          break;
        }
        case ApiKind::StreamOrderedAlloc: stream_ordered.insert(c.handle); break;
        case ApiKind::StreamOrderedFree: stream_ordered.erase(c.handle); break;
        case ApiKind::Free:
          d.stream_ordered_pointer = stream_ordered.erase(c.handle) > 0;
          break;
        case ApiKind::KernelLaunch: d.first_launch = launched.insert(c.function).second; break;
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
      if (blocking_kind(out_.described[c].stream) && takes_stream(out_.described[c].api)) {
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

  uint32_t own_stream_id(size_t call) const {
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
    for (const Mark& m : log_.marks) {
      if (m.kind == kind && m.time_ns >= c.start_ns && m.time_ns <= c.end_ns) return true;
    }
    return false;
  }

  // The op in `self`'s stream that ended last at or before `self` started (the first in start order among equal
  // ends), -1 if none.
  int64_t previous_in_stream(size_t self) const { return idx_.streams->previous(self); }

  Evidence attribute(size_t ci) const {
    const ApiCall& c = log_.calls[ci];
    Evidence ev;
    if (mark_within(MarkKind::ContextCreated, c)) {
      ev.by = ReleasedBy::ContextCreation;
      return ev;
    }
    // What released the call: its own work if that ended while the call held the host (the documented reason,
    // even when the driver needed a while after the DMA, e.g. to copy the last staged chunk to pageable memory);
    // otherwise the GPU work whose end is closest to the call's return, within the release window.
    const uint64_t lo = c.start_ns, hi = c.end_ns + opt_.release_window_ns;
    auto first = std::lower_bound(idx_.ops_by_end.begin(), idx_.ops_by_end.end(), lo,
                                  [&](size_t oi, uint64_t t) { return log_.ops[oi].end_ns < t; });
    int64_t best = -1, own_best = -1;
    uint64_t best_dist = UINT64_MAX;
    for (auto it = first; it != idx_.ops_by_end.end() && log_.ops[*it].end_ns <= hi; ++it) {
      const GpuOp& op = log_.ops[*it];
      if (is_own(op, c)) own_best = static_cast<int64_t>(*it);  // ops_by_end is sorted: the last one wins
      const uint64_t dist = op.end_ns > c.end_ns ? op.end_ns - c.end_ns : c.end_ns - op.end_ns;
      if (dist < best_dist) {
        best = static_cast<int64_t>(*it);
        best_dist = dist;
      }
    }
    if (own_best >= 0) {
      best = own_best;
    } else if (best < 0 || best_dist > opt_.release_window_ns) {
      ev.by = mark_within(MarkKind::ModuleLoaded, c) ? ReleasedBy::ModuleLoad : ReleasedBy::NothingOnGpu;
      return ev;
    }
    const GpuOp& op = log_.ops[static_cast<size_t>(best)];
    ev.op = best;
    ev.gap_ns = static_cast<int64_t>(c.end_ns) - static_cast<int64_t>(op.end_ns);
    const uint32_t own = own_stream_id(ci);
    if (is_own(op, c)) {
      ev.by = ReleasedBy::OwnWork;
      // Did its own work have to wait for earlier work in the stream before it could start?
      if (op.start_ns > c.start_ns + opt_.gpu_gap_ns) {
        int64_t prev = previous_in_stream(static_cast<size_t>(best));
        if (prev >= 0 && log_.ops[static_cast<size_t>(prev)].end_ns + opt_.gpu_gap_ns >= op.start_ns &&
            log_.ops[static_cast<size_t>(prev)].end_ns > c.start_ns) {
          ev.behind_op = prev;
        }
      }
    } else if (own != UINT32_MAX && op.stream_id == own) {
      ev.by = ReleasedBy::EarlierWorkSameStream;
    } else if (own == UINT32_MAX && same_stream_by_handle(c, op)) {
      ev.by = ReleasedBy::EarlierWorkSameStream;
    } else {
      ev.by = ReleasedBy::OtherStreamWork;
    }
    return ev;
  }

  // For calls without GPU work of their own (stream synchronize), match the op's stream through any other call
  // that enqueued work with the same stream handle.
  bool same_stream_by_handle(const ApiCall& c, const GpuOp& op) const {
    const int64_t p = idx_.corr->call_of(op.correlation_id);
    if (p < 0) return false;
    const ApiCall& producer = log_.calls[static_cast<size_t>(p)];
    return producer.stream == c.stream &&
           out_.described[static_cast<size_t>(p)].stream == out_.described[&c - log_.calls.data()].stream;
  }

  void judge_host(size_t ci) {
    const ApiCall& c = log_.calls[ci];
    const rules::Prediction& p = out_.predicted[ci];
    const uint64_t held = c.end_ns - c.start_ns;
    const bool documented = p.may_hold_host();
    if (held < opt_.threshold_ns) {
      if (documented) ++out_.not_observed[p.host_rule];
      return;
    }
    Finding f;
    f.call = ci;
    f.held_ns = held;
    f.predicted = p.host_rule;
    f.evidence = attribute(ci);
    if (f.evidence.by == ReleasedBy::ContextCreation) {
      out_.context_creation_ns += held;  // the first call of the process pays for the context: not a sync issue
      if (documented) ++out_.not_observed[p.host_rule];
      return;
    }
    if (documented) {
      f.verdict = Verdict::DocumentedObserved;
      f.rule = p.host_rule;
    } else if (c.call.api == ApiKind::KernelLaunch && f.evidence.by == ReleasedBy::ModuleLoad) {
      f.verdict = Verdict::DocumentedObserved;  // lazy loading of a function we had seen launched through another path
      f.rule = rules::RuleId::FirstLaunchLazyLoading;
    } else if (f.evidence.by == ReleasedBy::NothingOnGpu && held < opt_.own_cost_threshold_ns) {
      return;  // a slow call, not a wait: see AnalysisOptions::own_cost_threshold_ns
    } else {
      f.verdict = Verdict::ObservedUndocumented;
      f.rule = rules::RuleId::UndocumentedBlock;
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
