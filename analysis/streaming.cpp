#include "analysis/streaming.h"

#include <algorithm>
#include <iterator>

#include "analysis/analyzer.h"
#include "analysis/flat_map.h"
#include "analysis/median_sketch.h"
#include "analysis/sorted_merge.h"

namespace asynccheck {
namespace {

uint64_t minus(uint64_t t, uint64_t d) { return t > d ? t - d : 0; }

}  // namespace

StreamingAnalysis::StreamingAnalysis(const StreamingOptions& options, const rules::Environment& env)
    : opt_(options), analyzer_(std::make_unique<Analyzer>(options.analysis, env)) {
  window_.run.env = env;
}
StreamingAnalysis::~StreamingAnalysis() = default;
StreamingAnalysis::StreamingAnalysis(StreamingAnalysis&&) noexcept = default;
StreamingAnalysis& StreamingAnalysis::operator=(StreamingAnalysis&&) noexcept = default;

void StreamingAnalysis::count_added(size_t calls, const OpVector& ops) {
  analyzer_->counts().calls_watched += calls;
  ops_seen_ += ops.size();
  for (const GpuOp& op : ops) {
    if (op.kind != GpuOpKind::Kernel || op.name.empty()) continue;
    // The earliest in log order, not the first to come: which comes first depends on how rounds group into chunks.
    auto [it, fresh] = first_kernels_.try_emplace(op.name, op);
    if (!fresh && before_in_log(op, it->second)) it->second = op;
  }
}

// Calls come after those described (the caller's promise): the merges leave the described ones where they are.
void StreamingAnalysis::add(CallVector calls, OpVector ops) {
  count_added(calls.size(), ops);
  merge_into(window_.calls, std::move(calls), InLogOrder{});
  merge_into(window_.ops, std::move(ops), InLogOrder{});
}

void StreamingAnalysis::add_copy(std::span<const ApiCall> calls, OpVector ops) {
  count_added(calls.size(), ops);
  merge_range_into(window_.calls, calls.begin(), calls.end(), InLogOrder{});
  merge_into(window_.ops, std::move(ops), InLogOrder{});
}

void StreamingAnalysis::set_marks(std::vector<Mark> marks) { window_.marks = std::move(marks); }

void StreamingAnalysis::count_unanalyzed(uint64_t calls, uint64_t ops) {
  analyzer_->counts().calls_watched += calls;
  carried_.calls += calls;
  unanalyzed_ops_ += ops;
}

void StreamingAnalysis::advance(uint64_t horizon_ns) {
  const uint64_t settled = minus(horizon_ns, opt_.margin_ns);
  std::vector<Finding> findings;
  if (horizon_ns == UINT64_MAX) {
    analyzer_->step(window_, UINT64_MAX, UINT64_MAX, findings);
  } else {
    described_until_ = std::max(described_until_, settled);
    analyzer_->step(window_, described_until_, settled, findings);
  }
  // What a call not judged yet may read begins at the earliest such call's start (or the next call's, at least
  // `settled`), less the windows its judgement looks back over.
  uint64_t earliest = settled;
  judged_calls_ = 0;
  for (size_t i = 0; i < window_.calls.size(); ++i) {
    if (analyzer_->state(i).judged) {
      ++judged_calls_;
    } else {
      earliest = std::min(earliest, window_.calls[i].start_ns);
    }
  }
  if (release_) release_->judged(window_, findings);
  fold(findings);
  if (horizon_ns == UINT64_MAX) return;
  const AnalysisOptions& a = opt_.analysis;
  prune(minus(earliest, a.gpu_gap_ns + a.release_window_ns));
}

// The GPU work that a call not judged yet may read: what ended from `cutoff_ns` on, per stream the last to end
// before it, untimed work of calls not judged yet (what their descriptions read); and the calls that enqueued it.
// One pass over the ops and one over the calls, with flat tables kept from step to step: this runs after every
// step, over the whole window.
void StreamingAnalysis::prune(uint64_t cutoff_ns) {
  OpVector& ops = window_.ops;
  const bool untimed = std::any_of(ops.begin(), ops.end(), [](const GpuOp& op) { return op.start_ns == 0; });
  FlatMap<char>& open = scratch_ids_;  // correlation ids of the calls not judged yet, when untimed work needs them
  open.clear();
  if (untimed) {
    for (size_t i = 0; i < window_.calls.size(); ++i) {
      if (analyzer_->state(i).judged) continue;
      open.try_emplace(window_.calls[i].correlation_id);
      if (window_.calls[i].driver_correlation_id != 0) open.try_emplace(window_.calls[i].driver_correlation_id);
    }
  }
  FlatMap<size_t>& before = scratch_streams_;  // per stream: the op that ended last before the cutoff
  before.clear();
  std::vector<char>& keep_op = scratch_keep_op_;
  keep_op.assign(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const GpuOp& op = ops[i];
    if (op.end_ns >= cutoff_ns && op.start_ns != 0) {
      keep_op[i] = 1;
    } else if (op.start_ns == 0) {
      keep_op[i] = open.contains(op.correlation_id);
    } else if (op.kind != GpuOpKind::Sync) {
      auto [it, fresh] = before.try_emplace(op.stream_id, i);
      const GpuOp& b = ops[*it];
      if (!fresh && (op.end_ns > b.end_ns || (op.end_ns == b.end_ns && op.start_ns < b.start_ns))) *it = i;
    }
  }
  // A stream's last op before the cutoff is what held its first kept op back (previous_in_stream, held_back); work
  // still to come is enqueued after the cutoff, so a stream with no op kept needs none (a stream destroyed, a thread
  // gone: otherwise one op, and its call, kept for the rest of the run).
  FlatMap<char>& live = scratch_live_;
  live.clear();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (keep_op[i]) live.try_emplace(ops[i].stream_id);
  }
  before.for_each([&](uint64_t stream, size_t i) {
    if (live.contains(stream)) keep_op[i] = 1;
  });
  if (release_) release_->ops_released(window_, keep_op);
  FlatMap<char>& producers = scratch_ids_;
  producers.clear();
  size_t out = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!keep_op[i]) continue;
    producers.try_emplace(ops[i].correlation_id);
    if (out != i) ops[out] = std::move(ops[i]);
    ++out;
  }
  ops.resize(out);
  auto enqueued_kept = [&](const ApiCall& c) {
    return producers.contains(c.correlation_id) ||
           (c.driver_correlation_id != 0 && producers.contains(c.driver_correlation_id));
  };
  std::vector<char>& keep = scratch_keep_call_;
  keep.assign(window_.calls.size(), 0);
  for (size_t i = 0; i < window_.calls.size(); ++i) {
    keep[i] = !analyzer_->state(i).judged || enqueued_kept(window_.calls[i]);
  }
  if (release_) release_->calls_released(window_, keep);
  size_t kept = 0;
  for (size_t i = 0; i < window_.calls.size(); ++i) {
    if (!keep[i]) continue;
    if (kept != i) window_.calls[kept] = std::move(window_.calls[i]);
    ++kept;
  }
  window_.calls.resize(kept);
  analyzer_->retain(keep);
}

void StreamingAnalysis::release_scratch() {
  analyzer_->release_index();
  scratch_ids_.release();
  scratch_live_.release();
  scratch_streams_.release();
  std::vector<char>().swap(scratch_keep_op_);
  std::vector<char>().swap(scratch_keep_call_);
}

// The op of the window that an example's evidence names, copied once into the result's ops.
uint32_t StreamingAnalysis::keep_op(size_t window_op) { return keep(window_.ops[window_op]); }

uint32_t StreamingAnalysis::keep(const GpuOp& op) {
  auto [it, fresh] = out_op_index_.try_emplace(
      {op.start_ns, op.end_ns, op.stream_id, op.correlation_id, static_cast<uint8_t>(op.kind)},
      static_cast<uint32_t>(out_ops_.size()));
  if (fresh) out_ops_.push_back(op);
  return it->second;
}

void StreamingAnalysis::fold(std::vector<Finding>& findings) {
  for (Finding& f : findings) {
    const ApiCall& c = window_.calls[f.call];
    const bool gpu_side = f.rule == rules::RuleId::LegacyStreamSerialization;
    size_t& kept = kept_per_key_[{c.stack, c.name, f.rule, c.nvtx_range, f.below_threshold}];
    if (kept < opt_.samples_per_site) {
      ++kept;
      Example e{c, analyzer_->state(f.call).described, analyzer_->state(f.call).predicted, f};
      for (int64_t* op : {&e.finding.evidence.op, &e.finding.evidence.behind_op, &e.finding.evidence.running_op}) {
        if (*op >= 0) *op = keep_op(static_cast<size_t>(*op));
      }
      examples_.push_back(std::move(e));
      continue;
    }
    auto [it, fresh] = carried_index_.try_emplace({c.stack, c.name, f.rule, c.nvtx_range}, carried_.findings.size());
    if (fresh) carried_.findings.push_back({c.stack, c.name, f.rule, 0, 0, 0, 0, c.nvtx_range, 0, 0, 0, {}});
    CarriedSite& s = carried_.findings[it->second];
    const uint64_t t = gpu_side ? f.gpu_delay_ns : f.held_ns;
    ++s.count;
    s.total_ns += t;
    s.waited_ns += gpu_side ? t : f.waited_ns;
    s.own_ns += gpu_side ? 0 : f.own_ns;
    s.below += f.below_threshold ? 1 : 0;
    ++s.median_sketch[sketch_bucket(t)];
    s.max_ns = std::max(s.max_ns, t);
    s.bytes += c.call.bytes;
  }
}

StreamingAnalysis::Result StreamingAnalysis::finish() {
  advance(UINT64_MAX);
  if (release_) {  // everything is judged: nothing is kept for later calls
    release_->ops_released(window_, std::vector<char>(window_.ops.size(), 0));
    release_->calls_released(window_, std::vector<char>(window_.calls.size(), 0));
  }
  Result r;
  Analysis& counts = analyzer_->counts();
  r.analysis.not_observed = std::move(counts.not_observed);
  r.analysis.context_creation_ns = counts.context_creation_ns;
  r.analysis.calls_watched = counts.calls_watched;
  r.analysis.captured_calls = counts.captured_calls;
  r.analysis.outside_range_calls = counts.outside_range_calls;
  r.analysis.kind_disagreements = counts.kind_disagreements;
  // The examples in log order (a call's findings in the order they were made), as the report reads them.
  std::stable_sort(examples_.begin(), examples_.end(),
                   [](const Example& a, const Example& b) { return before_in_log(a.call, b.call); });
  for (Example& e : examples_) {
    const bool same_call = !r.log.calls.empty() && r.log.calls.back().correlation_id == e.call.correlation_id &&
                           r.log.calls.back().start_ns == e.call.start_ns;  // a call's second finding (legacy stream)
    if (!same_call) {
      r.log.calls.push_back(e.call);
      r.log.calls.back().call = e.described;  // as judged, so that the log reads back as it was analyzed
      r.analysis.described.push_back(e.described);
      r.analysis.predicted.push_back(e.predicted);
    }
    e.finding.call = r.log.calls.size() - 1;
    r.analysis.findings.push_back(std::move(e.finding));
  }
  // By name, not in the table's order (its hash's, of the names' addresses): which of two operations that read the
  // same to keep() is kept must not change from run to run. The kept ones are put in log order below.
  std::vector<const GpuOp*> firsts;
  for (const auto& [name, op] : first_kernels_) firsts.push_back(&op);
  std::sort(firsts.begin(), firsts.end(), [](const GpuOp* a, const GpuOp* b) { return a->name.str() < b->name.str(); });
  for (const GpuOp* op : firsts) keep(*op);
  // In log order, the evidence renumbered: the kept operations read the same however rounds grouped into chunks.
  std::vector<uint32_t> order(out_ops_.size()), renumbered(out_ops_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return before_in_log(out_ops_[a], out_ops_[b]); });
  for (uint32_t i = 0; i < order.size(); ++i) {
    renumbered[order[i]] = i;
    r.log.ops.push_back(std::move(out_ops_[order[i]]));
  }
  for (Finding& f : r.analysis.findings) {
    for (int64_t* op : {&f.evidence.op, &f.evidence.behind_op, &f.evidence.running_op}) {
      if (*op >= 0) *op = renumbered[static_cast<size_t>(*op)];
    }
  }
  out_ops_.clear();
  r.log.marks = std::move(window_.marks);
  r.log.carried = std::move(carried_);
  r.log.carried.calls = r.analysis.calls_watched - r.log.calls.size();
  r.log.carried.ops = ops_seen_ + unanalyzed_ops_ - r.log.ops.size();
  r.log.carried.not_observed = r.analysis.not_observed;  // so that the log reads back with its counts
  r.log.carried.context_creation_ns = r.analysis.context_creation_ns;
  r.log.carried.kind_disagreements = r.analysis.kind_disagreements;
  r.log.carried.captured_calls = r.analysis.captured_calls;
  r.log.carried.outside_range_calls = r.analysis.outside_range_calls;
  r.log.analyzed = true;
  r.log.findings = r.analysis.findings;
  return r;
}

}  // namespace asynccheck
