// Chrome trace event JSON (the "Trace Event Format" that Perfetto's UI and chrome://tracing load), so that a stall is
// seen the way a profiler timeline shows it: the watched API calls on their host threads, the GPU work on its streams,
// an arrow from each call to the work it enqueued, and the calls asynccheck flagged marked. The layout is documented
// in docs/report-format.md ("Chrome trace"); tests/report/validate_trace.py checks a file against the format.
//
// Events are written straight to the stream one by one; what is held in memory is a few indices per call and per GPU
// operation (which track each one is drawn on, the call that enqueued each operation).
#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "report/report.h"

namespace asynccheck::report {
namespace {

// The host process keeps the program's real pid. Each GPU is a process of its own with pid kGpuPidBase + device:
// Linux pids never exceed PID_MAX_LIMIT (2^22), so these cannot clash with the program's pid, and they still fit the
// unsigned 32-bit pid that Perfetto's JSON importer reads.
constexpr uint64_t kGpuPidBase = uint64_t{1} << 30;

// The stream id CUPTI gives synchronization records that belong to no stream (context and event synchronization).
constexpr uint32_t kNoStream = 0xFFFFFFFFu;

// A flow arrow is bound to the slice that encloses its timestamp. Both ends are put 1 ns after their slice's start:
// strictly inside it, so that the binding does not depend on the order in which an importer sorts events of equal
// timestamp. A slice shorter than 2 ns has no such point, and gets no arrow.
constexpr uint64_t kFlowInset = 1;

std::string_view copy_kind_text(uint8_t k) {  // CUpti_ActivityMemcpyKind
  static constexpr std::string_view kNames[] = {"?",    "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return k < std::size(kNames) ? kNames[k] : "?";
}

std::string_view memory_kind_text(uint8_t k) {  // CUpti_ActivityMemoryKind
  static constexpr std::string_view kNames[] = {"unknown", "pageable", "pinned",        "device",
                                                "array",   "managed",  "device static", "managed static"};
  return k < std::size(kNames) ? kNames[k] : "unknown";
}

std::string_view sync_type_text(uint8_t k) {  // CUpti_ActivitySynchronizationType
  static constexpr std::string_view kNames[] = {"synchronization", "event synchronize", "stream wait event",
                                                "stream synchronize", "context synchronize"};
  return k < std::size(kNames) ? kNames[k] : "synchronization";
}

std::string q(std::string_view s) { return json_string(s); }

std::string basename_of(const std::string& path) { return std::string(base_name(path)); }

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Places intervals, given in order of start (longest first among equal starts), on the fewest lanes such that each
// lane draws correctly: with `nest`, intervals on a lane may contain one another but never partially overlap (a
// thread's calls nest like a call stack); without, they may not overlap at all (a stream runs one operation at a
// time, and an operation drawn inside another would be a lie).
class Lanes {
 public:
  explicit Lanes(bool nest) : nest_(nest) {}
  uint32_t place(uint64_t start, uint64_t end) {
    for (size_t k = 0; k < open_.size(); ++k) {
      std::vector<uint64_t>& ends = open_[k];  // ends of the intervals still open on lane k, innermost last
      while (!ends.empty() && ends.back() <= start) ends.pop_back();
      if (ends.empty() || (nest_ && end <= ends.back())) {
        ends.push_back(end);
        return static_cast<uint32_t>(k);
      }
    }
    open_.push_back({end});
    return static_cast<uint32_t>(open_.size() - 1);
  }
  uint32_t count() const { return static_cast<uint32_t>(std::max<size_t>(open_.size(), 1)); }

 private:
  bool nest_;
  std::vector<std::vector<uint64_t>> open_;
};

// One row of the timeline: a (pid, tid) with its name and position.
struct Track {
  uint64_t pid = 0;
  uint64_t tid = 0;
  std::string name;
};

// What a finding says about a GPU operation other than the one it marks.
struct OpNote {
  enum Kind { Released, HeldUp, Serialized } kind;
  size_t finding;
};

class TraceWriter {
 public:
  TraceWriter(std::ostream& out, const ReportData& data) : o_(out), data_(data), log_(*data.log), a_(*data.analysis) {}

  void write() {
    index();
    o_ << "{\"traceEvents\": [";
    metadata();
    for (size_t i = 0; i < log_.calls.size(); ++i) call_event(i);
    for (const Mark& m : log_.marks) mark_event(m);
    for (size_t i = 0; i < log_.ops.size(); ++i) op_event(i);
    o_ << (first_ ? "],\n" : "\n],\n");
    other_data();
  }

 private:
  // ---- indexing: which track each call and operation is drawn on, what the findings say about them ----

  static uint64_t end_of(uint64_t start, uint64_t end) { return std::max(start, end); }
  static bool timed(const GpuOp& op) { return op.start_ns != 0; }  // CUPTI leaves 0 in records it could not time

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
    uint64_t tid = 1;
    for (const auto& [thread, lanes] : lanes_of_thread) {
      thread_tid_[thread] = tid;
      for (uint32_t l = 0; l < lanes; ++l) {
        std::string name = "host thread " + std::to_string(thread);
        if (l) name += " (overlap " + std::to_string(l) + ")";
        host_tracks_.push_back({host_pid_, tid++, std::move(name)});
      }
    }

    // GPU: one process per device, one track per CUPTI stream. Synchronization records are host waits that CUPTI
    // reports per stream; they overlap the work they wait for, so they get a track of their own beside the stream's.
    // Operations that overlap in one stream (CUPTI never reported that in our recordings, but clocks can disagree by
    // a few nanoseconds) go to extra "overlap" tracks rather than being drawn inside one another.
    using GroupKey = std::tuple<uint32_t, uint32_t, bool>;  // device, stream, synchronization
    auto group_of = [&](size_t i) {
      const GpuOp& op = log_.ops[i];
      return GroupKey{op.device, op.stream_id, op.kind == GpuOpKind::Sync};
    };
    order.clear();
    for (size_t i = 0; i < log_.ops.size(); ++i) {
      if (timed(log_.ops[i]))
        order.push_back(i);
      else
        ++untimed_ops_;
    }
    auto op_key = [&](size_t i) {
      const GpuOp& op = log_.ops[i];
      return std::make_tuple(group_of(i), op.start_ns, ~end_of(op.start_ns, op.end_ns), i);
    };
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return op_key(x) < op_key(y); });
    std::vector<uint32_t> op_lane(log_.ops.size(), 0);
    std::map<GroupKey, uint32_t> lanes_of_group;
    for (size_t k = 0; k < order.size();) {
      const GroupKey g = group_of(order[k]);
      Lanes lanes(false);
      for (; k < order.size() && group_of(order[k]) == g; ++k) {
        const GpuOp& op = log_.ops[order[k]];
        op_lane[order[k]] = lanes.place(op.start_ns, end_of(op.start_ns, op.end_ns));
      }
      lanes_of_group[g] = lanes.count();
    }
    std::map<std::pair<GroupKey, uint32_t>, size_t> track_of;  // (group, lane) -> index into gpu_tracks_
    std::map<uint32_t, uint64_t> next_tid;                     // device -> next tid
    for (const auto& [g, lanes] : lanes_of_group) {
      const auto [device, stream, sync] = g;
      for (uint32_t l = 0; l < lanes; ++l) {
        std::string name =
            stream == kNoStream ? std::string("synchronization (no stream)") : "stream " + std::to_string(stream);
        if (sync && stream != kNoStream) name += ": synchronization";
        if (l) name += " (overlap " + std::to_string(l) + ")";
        if (l) ++overlap_tracks_;
        uint64_t& device_tid = next_tid.try_emplace(device, 1).first->second;
        track_of[{g, l}] = gpu_tracks_.size();
        gpu_tracks_.push_back({kGpuPidBase + device, device_tid++, std::move(name)});
      }
    }
    op_track_.assign(log_.ops.size(), 0);
    for (size_t i : order) op_track_[i] = static_cast<uint32_t>(track_of[{group_of(i), op_lane[i]}]);

    // The call that enqueued each operation, by CUPTI correlation id (a runtime call's records may carry the id of
    // the driver call it made); the first call wins, as in the analysis.
    for (size_t i = 0; i < log_.calls.size(); ++i) {
      call_by_corr_.emplace(log_.calls[i].correlation_id, i);
      if (log_.calls[i].driver_correlation_id != 0) call_by_corr_.emplace(log_.calls[i].driver_correlation_id, i);
    }

    // Findings per call, and what they say about other operations.
    const std::set<std::tuple<std::string, int, std::string>> hidden = suppressed_keys();
    std::vector<CallSite> sites;
    if (!hidden.empty()) sites = call_sites(log_, kernel_names(log_), data_.library_patterns);
    std::unordered_map<uint64_t, size_t> serialized_corr;  // correlation id of a legacy-stream call -> its finding
    for (size_t fi = 0; fi < a_.findings.size(); ++fi) {
      const Finding& f = a_.findings[fi];
      if (f.call >= log_.calls.size()) continue;
      if (f.below_threshold) continue;  // drawn as an ordinary call: a wait under the threshold
      if (!hidden.empty() && hidden.count(site_key(f, sites))) {
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
        if (e.op >= 0 && e.op != e.behind_op) serialized_corr.emplace(log_.calls[f.call].correlation_id, fi);
        for (int64_t x : {e.op, e.behind_op}) {
          if (x >= 0) notes_[static_cast<size_t>(x)].push_back({OpNote::Serialized, fi});
        }
      } else {
        if (e.op >= 0) notes_[static_cast<size_t>(e.op)].push_back({OpNote::Released, fi});
        if (e.behind_op >= 0) notes_[static_cast<size_t>(e.behind_op)].push_back({OpNote::HeldUp, fi});
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
        notes_[i].push_back({OpNote::Serialized, s->second});
      }
    }
    for (auto& [op, list] : notes_) {
      std::sort(list.begin(), list.end(), [](const OpNote& x, const OpNote& y) {
        return std::tie(x.finding, x.kind) < std::tie(y.finding, y.kind);
      });
      list.erase(
          std::unique(list.begin(), list.end(),
                      [](const OpNote& x, const OpNote& y) { return x.finding == y.finding && x.kind == y.kind; }),
          list.end());
    }
    for (auto& [op, list] : delayed_) {
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
  }

  // The sites a suppression hid, keyed as aggregate() groups findings: (where|function or "?", rule, api).
  std::set<std::tuple<std::string, int, std::string>> suppressed_keys() const {
    std::set<std::tuple<std::string, int, std::string>> keys;
    for (const SiteRow& r : data_.suppressed) {
      keys.emplace(r.site.known() ? r.site.where() + "|" + r.site.frame.function : "?", static_cast<int>(r.rule),
                   r.api);
    }
    return keys;
  }

  std::tuple<std::string, int, std::string> site_key(const Finding& f, const std::vector<CallSite>& sites) const {
    const ApiCall& c = log_.calls[f.call];
    CallSite site;
    if (c.stack > 0 && c.stack <= sites.size()) site = sites[c.stack - 1];
    return {site.known() ? site.where() + "|" + site.frame.function : "?", static_cast<int>(f.rule), api_name(c)};
  }

  // ---- output ----

  std::string api_name(const ApiCall& c) const {
    return c.name < log_.api_names.size() ? log_.api_names[c.name] : "api#" + std::to_string(c.name);
  }

  // How a call is named in the arguments of other events.
  std::string call_label(size_t ci) const {
    const ApiCall& c = log_.calls[ci];
    return api_name(c) + " (correlation " + std::to_string(c.correlation_id) + ", host thread " +
           std::to_string(c.thread) + ")";
  }

  uint64_t rel(uint64_t t) const { return t > origin_ ? t - origin_ : 0; }

  // Microseconds with exactly three decimals: the nanoseconds survive, and every importer reads the same number.
  void us(uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                  static_cast<unsigned long long>(ns % 1000));
    o_ << buf;
  }

  void begin_event() {
    o_ << (first_ ? "\n" : ",\n");
    first_ = false;
  }

  void where(uint64_t pid, uint64_t tid) { o_ << ", \"pid\": " << pid << ", \"tid\": " << tid; }

  void meta(std::string_view name, uint64_t pid, const uint64_t* tid, std::string_view key, const std::string& value) {
    begin_event();
    o_ << "{\"name\": \"" << name << "\", \"ph\": \"M\", \"pid\": " << pid;
    if (tid) o_ << ", \"tid\": " << *tid;
    o_ << ", \"args\": {\"" << key << "\": " << value << "}}";
  }

  void metadata() {
    std::string program = basename_of(log_.run.program);
    if (program.empty()) program = "program";
    meta("process_name", host_pid_, nullptr, "name", q(program + " (host)"));
    meta("process_sort_index", host_pid_, nullptr, "sort_index", "0");  // the host first, then the GPUs in order
    uint64_t sort = 0;
    for (const Track& t : host_tracks_) {
      meta("thread_name", t.pid, &t.tid, "name", q(t.name));
      meta("thread_sort_index", t.pid, &t.tid, "sort_index", std::to_string(sort++));
    }
    uint64_t pid = 0;
    for (const Track& t : gpu_tracks_) {
      if (t.pid != pid) {
        pid = t.pid;
        const uint64_t device = pid - kGpuPidBase;
        std::string name = "GPU " + std::to_string(device);
        if (!log_.run.gpu.empty()) name += " (" + log_.run.gpu + ")";
        meta("process_name", pid, nullptr, "name", q(name));
        meta("process_sort_index", pid, nullptr, "sort_index", std::to_string(device + 1));
        sort = 0;
      }
      meta("thread_name", t.pid, &t.tid, "name", q(t.name));
      meta("thread_sort_index", t.pid, &t.tid, "sort_index", std::to_string(sort++));
    }
  }

  // `dur` of an interval, clamped at zero; a note for the arguments when it is zero.
  static std::string zero_note(uint64_t start, uint64_t end) {
    if (end < start) return "end recorded " + format_duration(start - end) + " before start: drawn with zero length";
    if (end == start) return "zero length as recorded";
    return "";
  }

  void call_event(size_t ci) {
    const ApiCall& c = log_.calls[ci];
    const uint64_t pid = host_pid_, tid = thread_tid_.at(c.thread) + call_lane_[ci];
    const uint64_t end = end_of(c.start_ns, c.end_ns);
    auto fit = findings_of_call_.find(ci);
    const std::vector<size_t>* fs = fit == findings_of_call_.end() ? nullptr : &fit->second;
    auto sit = suppressed_of_call_.find(ci);
    const bool suppressed = !fs && sit != suppressed_of_call_.end();
    begin_event();
    o_ << "{\"name\": " << q(api_name(c)) << ", \"cat\": \""
       << (fs           ? "cuda_api,flagged"
           : suppressed ? "cuda_api,suppressed"
                        : "cuda_api")
       << "\", \"ph\": \"X\", \"ts\": ";
    us(rel(c.start_ns));
    o_ << ", \"dur\": ";
    us(end - c.start_ns);
    where(pid, tid);
    o_ << ", \"args\": {\"correlation\": " << c.correlation_id
       << ", \"stream\": " << q(c.stream ? hex(c.stream) : "default");
    if (c.call.bytes) o_ << ", \"bytes\": " << c.call.bytes;
    if (c.result) o_ << ", \"result\": " << c.result;
    if (c.nvtx_range) {
      const NvtxRange& r = nvtx_range(log_, c.nvtx_range);
      o_ << ", \"nvtx_range\": " << q(r.name);
      if (!r.domain.empty()) o_ << ", \"nvtx_domain\": " << q(r.domain);
      if (r.parent != 0) o_ << ", \"nvtx_path\": " << q(nvtx_path(log_, c.nvtx_range));
    }
    if (c.end_ns <= c.start_ns) o_ << ", \"note\": " << q(zero_note(c.start_ns, c.end_ns));
    if (fs) {
      // Several findings on one call (a host finding and a legacy-stream one): each field lists them in order.
      std::string rule, level, evidence, fix;
      uint64_t gpu_delay = 0;
      for (size_t fi : *fs) {
        const Finding& f = a_.findings[fi];
        const std::string sep = rule.empty() ? "" : "; ";
        rule += sep + std::string(rules::rule(f.rule).id);
        level += sep + std::string(rules::level_name(f.level));
        evidence += sep + evidence_text(log_, f);
        fix += sep + std::string(rules::rule(f.rule).fix);
        gpu_delay = std::max(gpu_delay, f.gpu_delay_ns);
      }
      const Finding& f0 = a_.findings[fs->front()];
      o_ << ", \"rule\": " << q(rule) << ", \"level\": " << q(level) << ", \"held\": " << q(format_duration(f0.held_ns))
         << ", \"held_ns\": " << f0.held_ns << ", \"waited_ns\": " << f0.waited_ns << ", \"own_ns\": " << f0.own_ns;
      if (gpu_delay) o_ << ", \"gpu_delay\": " << q(format_duration(gpu_delay));
      o_ << ", \"evidence\": " << q(evidence) << ", \"fix\": " << q(fix);
    } else if (suppressed) {
      o_ << ", \"suppressed\": " << q(rules::rule(a_.findings[sit->second].rule).id);
    }
    o_ << "}}";
    if (!fs) return;
    // The stall, where it ends: one mark per host finding at the call's return (GPU-side findings mark the delayed
    // GPU work instead: the host was not held).
    for (size_t fi : *fs) {
      const Finding& f = a_.findings[fi];
      if (f.rule == rules::RuleId::LegacyStreamSerialization) continue;
      begin_event();
      o_ << "{\"name\": " << q("blocked: " + std::string(rules::rule(f.rule).id))
         << ", \"cat\": \"flagged\", \"ph\": \"i\", \"s\": \"t\", \"ts\": ";
      us(rel(end));
      where(pid, tid);
      o_ << ", \"args\": {\"call\": " << q(call_label(ci)) << ", \"held\": " << q(format_duration(f.held_ns))
         << ", \"waited\": " << q(format_duration(f.waited_ns)) << ", \"own\": " << q(format_duration(f.own_ns))
         << ", \"level\": " << q(rules::level_name(f.level)) << "}}";
      ++flagged_marks_;
    }
  }

  void mark_event(const Mark& m) {
    std::string_view name = "context created";
    if (m.kind == MarkKind::ModuleLoaded) name = "module loaded";
    if (m.kind == MarkKind::ContextDestroyed) name = "context destroyed";
    begin_event();
    o_ << "{\"name\": \"" << name << "\", \"cat\": \"cuda_driver\", \"ph\": \"i\", \"s\": \"t\", \"ts\": ";
    us(rel(m.time_ns));
    where(host_pid_, thread_tid_.at(m.thread));
    o_ << "}";
  }

  const std::string& demangled(const std::string& name) {
    auto it = demangled_.find(name);
    if (it == demangled_.end()) it = demangled_.emplace(name, demangle(name)).first;
    return it->second;
  }

  std::string op_name(const GpuOp& op) {
    switch (op.kind) {
      case GpuOpKind::Memcpy:
        return "memcpy " + std::string(copy_kind_text(op.copy_kind)) + " " + format_bytes(op.bytes);
      case GpuOpKind::Memset: return "memset " + format_bytes(op.bytes);
      case GpuOpKind::Kernel: return op.name.empty() ? std::string("kernel") : demangled(op.name);
      case GpuOpKind::Sync: return std::string(sync_type_text(op.sync_type));
      case GpuOpKind::Migration:
        return std::string("migration ") + (op.copy_kind == 2 ? "DtoH " : "HtoD ") + format_bytes(op.bytes);
    }
    return "?";
  }

  static std::string_view op_category(GpuOpKind k) {
    switch (k) {
      case GpuOpKind::Memcpy: return "memcpy";
      case GpuOpKind::Memset: return "memset";
      case GpuOpKind::Kernel: return "kernel";
      case GpuOpKind::Sync: return "sync";
      case GpuOpKind::Migration: return "migration";
    }
    return "gpu";
  }

  void op_event(size_t i) {
    const GpuOp& op = log_.ops[i];
    if (!timed(op)) return;
    const Track& t = gpu_tracks_[op_track_[i]];
    const uint64_t end = end_of(op.start_ns, op.end_ns);
    auto c = call_by_corr_.find(op.correlation_id);
    const bool has_call = c != call_by_corr_.end();
    begin_event();
    o_ << "{\"name\": " << q(op_name(op)) << ", \"cat\": \"" << op_category(op.kind) << "\", \"ph\": \"X\", \"ts\": ";
    us(rel(op.start_ns));
    o_ << ", \"dur\": ";
    us(end - op.start_ns);
    where(t.pid, t.tid);
    o_ << ", \"args\": {\"correlation\": " << op.correlation_id << ", \"device\": " << op.device << ", \"stream\": ";
    if (op.stream_id == kNoStream)
      o_ << "\"none\"";
    else
      o_ << op.stream_id;
    if (op.kind == GpuOpKind::Memcpy || op.kind == GpuOpKind::Memset) o_ << ", \"bytes\": " << op.bytes;
    if (op.kind == GpuOpKind::Memcpy) {
      o_ << ", \"copy_kind\": \"" << copy_kind_text(op.copy_kind) << "\", \"memory\": \""
         << memory_kind_text(op.src_kind) << " -> " << memory_kind_text(op.dst_kind) << "\"";
    }
    if (op.kind == GpuOpKind::Memset) o_ << ", \"memory\": \"" << memory_kind_text(op.dst_kind) << "\"";
    if (op.kind == GpuOpKind::Kernel && !op.name.empty() && demangled(op.name) != op.name)
      o_ << ", \"mangled\": " << q(op.name);
    if (has_call) o_ << ", \"call\": " << q(call_label(c->second));
    if (op.end_ns <= op.start_ns) o_ << ", \"note\": " << q(zero_note(op.start_ns, op.end_ns));
    auto n = notes_.find(i);
    if (n != notes_.end()) {
      std::map<OpNote::Kind, std::string> text;
      for (const OpNote& note : n->second) {
        const Finding& f = a_.findings[note.finding];
        std::string& s = text[note.kind];
        if (!s.empty()) s += "; ";
        s += note.kind == OpNote::Serialized ? std::string(rules::rule(f.rule).id) + " by " + call_label(f.call)
                                             : call_label(f.call);
      }
      // released: the call that returned when this work ended; held_up: a call whose own work waited for this first;
      // serialized: a legacy-stream command whose serialization delayed this work or was delayed by it.
      static constexpr std::string_view kKey[] = {"released", "held_up", "serialized"};
      for (const auto& [kind, s] : text) o_ << ", \"" << kKey[kind] << "\": " << q(s);
    }
    o_ << "}}";

    // The arrow from the call to the work it enqueued (synchronization records are waits, not enqueued work).
    if (has_call && op.kind != GpuOpKind::Sync) {
      const ApiCall& call = log_.calls[c->second];
      const uint64_t call_end = end_of(call.start_ns, call.end_ns);
      if (call_end - call.start_ns > kFlowInset && end - op.start_ns > kFlowInset) {
        const uint64_t id = i + 1;  // unique per arrow: an operation has at most one
        begin_event();
        o_ << "{\"name\": \"enqueue\", \"cat\": \"cuda_flow\", \"ph\": \"s\", \"id\": " << id << ", \"ts\": ";
        us(rel(call.start_ns) + kFlowInset);
        where(host_pid_, thread_tid_.at(call.thread) + call_lane_[c->second]);
        o_ << "}";
        begin_event();
        o_ << "{\"name\": \"enqueue\", \"cat\": \"cuda_flow\", \"ph\": \"f\", \"bp\": \"e\", \"id\": " << id
           << ", \"ts\": ";
        us(rel(op.start_ns) + kFlowInset);
        where(t.pid, t.tid);
        o_ << "}";
        ++flows_;
      } else {
        ++flows_skipped_;
      }
    }

    // GPU-side findings: the work that was held back, marked where it started.
    auto d = delayed_.find(i);
    if (d == delayed_.end()) return;
    for (size_t fi : d->second) {
      const Finding& f = a_.findings[fi];
      begin_event();
      o_ << "{\"name\": " << q("delayed: " + std::string(rules::rule(f.rule).id))
         << ", \"cat\": \"flagged\", \"ph\": \"i\", \"s\": \"t\", \"ts\": ";
      us(rel(op.start_ns));
      where(t.pid, t.tid);
      o_ << ", \"args\": {\"call\": " << q(call_label(f.call))
         << ", \"gpu_delay\": " << q(format_duration(f.gpu_delay_ns))
         << ", \"level\": " << q(rules::level_name(f.level)) << ", \"evidence\": " << q(evidence_text(log_, f)) << "}}";
      ++flagged_marks_;
    }
  }

  void other_data() {
    const RunInfo& r = log_.run;
    o_ << "\"displayTimeUnit\": \"ns\",\n\"otherData\": {\"generator\": \"asynccheck\", \"program\": " << q(r.program)
       << ", \"pid\": " << r.pid << ", \"gpu\": " << q(r.gpu) << ", \"driver\": " << q(r.driver)
       << ", \"monitoring\": " << q(r.monitoring) << ", \"complete\": " << (r.complete ? "true" : "false")
       << ", \"dropped_records\": " << r.dropped_records << ", \"unanalyzed_calls\": " << r.unanalyzed_calls
       << ", \"threshold_ns\": " << r.threshold_ns << ", \"cost_threshold_ns\": " << r.cost_threshold_ns
       << ", \"time_origin_ns\": " << origin_ << ", \"gpu_pid_base\": " << kGpuPidBase
       << ", \"calls\": " << log_.calls.size() << ", \"gpu_operations\": " << log_.ops.size()
       << ", \"gpu_operations_untimed\": " << untimed_ops_ << ", \"findings\": " << a_.findings.size() - suppressed_
       << ", \"findings_suppressed\": " << suppressed_ << ", \"flagged_marks\": " << flagged_marks_
       << ", \"flows\": " << flows_ << ", \"flows_skipped_too_short\": " << flows_skipped_
       << ", \"overlap_tracks\": " << overlap_tracks_ << "}\n}\n";
  }

  std::ostream& o_;
  const ReportData& data_;
  const EventLog& log_;
  const Analysis& a_;
  bool first_ = true;
  uint64_t origin_ = 0;
  uint64_t host_pid_ = 1;
  std::map<uint32_t, uint64_t> thread_tid_;  // thread -> tid of its first lane
  std::vector<uint32_t> call_lane_;          // per call
  std::vector<uint32_t> op_track_;           // per operation: index into gpu_tracks_
  std::vector<Track> host_tracks_, gpu_tracks_;
  std::unordered_map<uint64_t, size_t> call_by_corr_;
  std::map<size_t, std::vector<size_t>> findings_of_call_;  // reported (not suppressed) findings per call
  std::map<size_t, size_t> suppressed_of_call_;             // call -> first finding a suppression hid there
  uint64_t suppressed_ = 0;
  std::map<size_t, std::vector<OpNote>> notes_;    // per operation
  std::map<size_t, std::vector<size_t>> delayed_;  // operation -> GPU-side findings that delayed it
  std::map<std::string, std::string> demangled_;
  uint64_t untimed_ops_ = 0, flows_ = 0, flows_skipped_ = 0, flagged_marks_ = 0, overlap_tracks_ = 0;
};

}  // namespace

void write_trace(std::ostream& out, const ReportData& data) { TraceWriter(out, data).write(); }

}  // namespace asynccheck::report
