// Chrome trace event JSON (the "Trace Event Format" that Perfetto's UI and chrome://tracing load), so that a stall is
// seen the way a profiler timeline shows it: the watched API calls on their host threads, the GPU work on its streams,
// an arrow from each call to the work it enqueued, and the calls asynccheck flagged marked. The layout is documented
// in docs/report-format.md ("Chrome trace"); tests/report/validate_trace.py checks a file against the format.
//
// This is the trace of a whole log (a recording, or a run analyzed at its end); trace_stream.h writes the same
// events as the run goes. Both draw each event with trace_draw.h. Events are written straight to the stream one by
// one; what is held in memory is a few indices per call and per GPU operation (which track each one is drawn on, the
// call that enqueued each operation).
#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "report/report.h"
#include "report/trace_draw.h"

namespace asynccheck::report {
namespace {

using namespace trace;

class TraceWriter {
 public:
  TraceWriter(std::ostream& out, const ReportData& data) : o_(out), data_(data), log_(*data.log), a_(*data.analysis) {}

  void write() {
    index();
    Writer w(o_, origin_);
    w.begin();
    w.metadata(log_.run, host_pid_, tracks_);
    for (size_t i = 0; i < log_.calls.size(); ++i) call_event(w, i);
    for (const Mark& m : log_.marks) w.mark(m, host_pid_, tracks_.thread_tid.at(m.thread));
    for (size_t i = 0; i < log_.ops.size(); ++i) op_event(w, i);
    w.end();
    Writer::Counts n;
    n.calls = log_.calls.size();
    n.ops = log_.ops.size();
    n.untimed_ops = untimed_ops_;
    n.findings = a_.findings.size();
    n.suppressed = suppressed_;
    n.overlap_tracks = tracks_.overlap_tracks;
    w.other_data(log_.run, n);
  }

 private:
  // ---- indexing: which track each call and operation is drawn on, what the findings say about them ----

  void index() {
    host_pid_ = log_.run.pid > 0 ? static_cast<uint64_t>(log_.run.pid) : 1;
    // The earliest timestamp is the trace's zero, so that the numbers stay small and keep their nanoseconds.
    bool any = false;
    auto see = [&](uint64_t t) {
      if (t == 0) return;
      origin_ = any ? std::min(origin_, t) : t;
      any = true;
    };
    for (const ApiCall& c : log_.calls) see(c.start_ns);
    for (const GpuOp& op : log_.ops) see(op.start_ns);
    for (const Mark& m : log_.marks) see(m.time_ns);

    // Host: one track per thread, plus one per extra lane where calls would partially overlap (never seen in real
    // recordings: CUPTI's callbacks nest like the calls themselves).
    std::map<uint32_t, uint32_t> lanes_of_thread;  // thread -> lanes
    for (const Mark& m : log_.marks) lanes_of_thread.emplace(m.thread, 1);
    std::vector<size_t> order(log_.calls.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto call_key = [&](size_t i) {
      const ApiCall& c = log_.calls[i];
      return std::make_tuple(c.thread, c.start_ns, ~end_of(c.start_ns, c.end_ns), i);
    };
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return call_key(x) < call_key(y); });
    call_lane_.assign(log_.calls.size(), 0);
    for (size_t k = 0; k < order.size();) {
      const uint32_t thread = log_.calls[order[k]].thread;
      Lanes lanes(true);
      for (; k < order.size() && log_.calls[order[k]].thread == thread; ++k) {
        const ApiCall& c = log_.calls[order[k]];
        call_lane_[order[k]] = lanes.place(c.start_ns, end_of(c.start_ns, c.end_ns));
      }
      lanes_of_thread[thread] = lanes.count();
    }

    // GPU: one process per device, one track per group (trace_draw.h: GpuGroup). Operations that overlap in one
    // stream (CUPTI never reported that in our recordings, but clocks can disagree by a few nanoseconds) go to extra
    // "overlap" tracks rather than being drawn inside one another.
    order.clear();
    for (size_t i = 0; i < log_.ops.size(); ++i) {
      if (timed(log_.ops[i]))
        order.push_back(i);
      else
        ++untimed_ops_;
    }
    auto op_key = [&](size_t i) {
      const GpuOp& op = log_.ops[i];
      const GpuGroup g = group_of(op);
      return std::make_tuple(g.device, g.stream, g.sync, op.start_ns, ~end_of(op.start_ns, op.end_ns), i);
    };
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return op_key(x) < op_key(y); });
    op_lane_.assign(log_.ops.size(), 0);
    std::map<GpuGroup, uint32_t> lanes_of_group;
    for (size_t k = 0; k < order.size();) {
      const GpuGroup g = group_of(log_.ops[order[k]]);
      Lanes lanes(false);
      for (; k < order.size() && !(g < group_of(log_.ops[order[k]])); ++k) {
        const GpuOp& op = log_.ops[order[k]];
        op_lane_[order[k]] = lanes.place(op.start_ns, end_of(op.start_ns, op.end_ns));
      }
      lanes_of_group[g] = lanes.count();
    }
    tracks_ = make_tracks(host_pid_, lanes_of_thread, lanes_of_group);

    // The call that enqueued each operation, by CUPTI correlation id (a runtime call's records may carry the id of
    // the driver call it made); the first call wins, as in the analysis.
    for (size_t i = 0; i < log_.calls.size(); ++i) {
      call_by_corr_.emplace(log_.calls[i].correlation_id, i);
      if (log_.calls[i].driver_correlation_id != 0) call_by_corr_.emplace(log_.calls[i].driver_correlation_id, i);
    }

    // Findings per call, and what they say about other operations.
    const std::set<SiteKey> hidden = suppressed_keys(data_);
    std::vector<CallSite> sites;
    if (!hidden.empty()) sites = call_sites(log_, kernel_names(log_), data_.library_patterns);
    std::unordered_map<uint64_t, size_t> serialized_corr;  // correlation id of a legacy-stream call -> its finding
    for (size_t fi = 0; fi < a_.findings.size(); ++fi) {
      const Finding& f = a_.findings[fi];
      if (f.call >= log_.calls.size()) continue;
      if (f.below_threshold) continue;  // drawn as an ordinary call: a wait under the threshold
      const ApiCall& c = log_.calls[f.call];
      if (!hidden.empty() && hidden.count(site_key(sites, c.stack, f.rule, api_name(log_.api_names, c)))) {
        ++suppressed_;
        suppressed_of_call_.emplace(f.call, fi);
        continue;
      }
      findings_of_call_[f.call].push_back(fi);
      Evidence e = f.evidence;
      if (e.op >= static_cast<int64_t>(log_.ops.size())) e.op = -1;  // indices from elsewhere are checked, not trusted
      if (e.behind_op >= static_cast<int64_t>(log_.ops.size())) e.behind_op = -1;
      if (f.rule == rules::RuleId::LegacyStreamSerialization) {
        // The analysis sets `behind_op` to work in another stream that the legacy-stream command held back, and `op`
        // to the work it waited for itself when it started late (or to behind_op when it did not). The delayed
        // operations get a mark; every operation involved names the call.
        if (e.behind_op >= 0) delayed_[static_cast<size_t>(e.behind_op)].push_back(fi);
        if (e.op >= 0 && e.op != e.behind_op) serialized_corr.emplace(c.correlation_id, fi);
        for (int64_t x : {e.op, e.behind_op}) {
          if (x >= 0) notes_[static_cast<size_t>(x)].push_back({fi, {NoteKind::Serialized, serialized_text(f)}});
        }
      } else {
        if (e.op >= 0) notes_[static_cast<size_t>(e.op)].push_back({fi, {NoteKind::Released, label(f.call)}});
        if (e.behind_op >= 0)
          notes_[static_cast<size_t>(e.behind_op)].push_back({fi, {NoteKind::HeldUp, label(f.call)}});
      }
    }
    // A legacy-stream command that started late: its own operation (the first one it enqueued) is the delayed one.
    if (!serialized_corr.empty()) {
      std::set<size_t> done;
      for (size_t i = 0; i < log_.ops.size(); ++i) {
        const GpuOp& op = log_.ops[i];
        if (op.kind == GpuOpKind::Sync) continue;
        auto c = call_by_corr_.find(op.correlation_id);
        if (c == call_by_corr_.end()) continue;
        auto s = serialized_corr.find(log_.calls[c->second].correlation_id);
        if (s == serialized_corr.end() || !done.insert(s->second).second) continue;
        delayed_[i].push_back(s->second);
        notes_[i].push_back({s->second, {NoteKind::Serialized, serialized_text(a_.findings[s->second])}});
      }
    }
    for (auto& [op, list] : delayed_) {
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
  }

  std::string label(size_t ci) const { return call_label(api_name(log_.api_names, log_.calls[ci]), log_.calls[ci]); }
  std::string serialized_text(const Finding& f) const {
    return std::string(rules::rule(f.rule).id) + " by " + label(f.call);
  }

  // ---- output ----

  void call_event(Writer& w, size_t ci) {
    const ApiCall& c = log_.calls[ci];
    std::vector<FindingDraw> fs;
    auto fit = findings_of_call_.find(ci);
    if (fit != findings_of_call_.end()) {
      for (size_t fi : fit->second) fs.push_back(finding_draw(log_, a_.findings[fi]));
    }
    std::string suppressed;
    auto sit = suppressed_of_call_.find(ci);
    if (sit != suppressed_of_call_.end()) suppressed = rules::rule(a_.findings[sit->second].rule).id;
    w.call(log_, c, host_pid_, tracks_.thread_tid.at(c.thread) + call_lane_[ci], fs, suppressed);
  }

  void op_event(Writer& w, size_t i) {
    const GpuOp& op = log_.ops[i];
    if (!timed(op)) return;
    const Track& t = tracks_.gpu[tracks_.group_track.at(group_of(op)) + op_lane_[i]];
    auto c = call_by_corr_.find(op.correlation_id);
    const bool has_call = c != call_by_corr_.end();
    std::vector<NoteDraw> notes;
    if (auto n = notes_.find(i); n != notes_.end()) notes = sorted_notes(n->second);
    FlowDraw flow;
    if (has_call) {
      const ApiCall& call = log_.calls[c->second];
      flow = {i + 1, call.start_ns, end_of(call.start_ns, call.end_ns), host_pid_,
              tracks_.thread_tid.at(call.thread) + call_lane_[c->second]};
    }
    std::vector<DelayDraw> delayed;
    if (auto d = delayed_.find(i); d != delayed_.end()) {
      for (size_t fi : d->second) {
        const Finding& f = a_.findings[fi];
        delayed.push_back({f.rule, f.level, f.gpu_delay_ns, label(f.call), evidence_text(log_, f)});
      }
    }
    w.op(op, t, has_call ? label(c->second) : std::string(), notes,
         has_call && op.kind != GpuOpKind::Sync ? &flow : nullptr, delayed);
  }

  std::ostream& o_;
  const ReportData& data_;
  const EventLog& log_;
  const Analysis& a_;
  uint64_t origin_ = 0;
  uint64_t host_pid_ = 1;
  TrackTable tracks_;
  std::vector<uint32_t> call_lane_;  // per call
  std::vector<uint32_t> op_lane_;    // per operation: its lane in its group
  std::unordered_map<uint64_t, size_t> call_by_corr_;
  std::map<size_t, std::vector<size_t>> findings_of_call_;  // reported (not suppressed) findings per call
  std::map<size_t, size_t> suppressed_of_call_;             // call -> first finding a suppression hid there
  uint64_t suppressed_ = 0;
  std::map<size_t, std::vector<std::pair<size_t, NoteDraw>>> notes_;  // per operation: (finding, note)
  std::map<size_t, std::vector<size_t>> delayed_;                     // operation -> GPU-side findings that delayed it
  uint64_t untimed_ops_ = 0;
};

}  // namespace

void write_trace(std::ostream& out, const ReportData& data) { TraceWriter(out, data).write(); }

}  // namespace asynccheck::report
