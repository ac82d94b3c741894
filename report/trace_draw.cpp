#include "report/trace_draw.h"

#include <charconv>

#include "report/report.h"

namespace asynccheck::report::trace {
namespace {

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

// Lives as long as `s`: written in the expression that makes it.
Quoted q(std::string_view s) { return {s}; }

std::string hex(uint64_t v) {
  char buf[24] = "0x";
  return std::string(buf, std::to_chars(buf + 2, buf + sizeof buf, v, 16).ptr);
}

// `dur` of an interval, clamped at zero; a note for the arguments when it is zero.
std::string zero_note(uint64_t start, uint64_t end) {
  if (end < start) return "end recorded " + format_duration(start - end) + " before start: drawn with zero length";
  if (end == start) return "zero length as recorded";
  return "";
}

std::string_view op_category(GpuOpKind k) {
  switch (k) {
    case GpuOpKind::Memcpy: return "memcpy";
    case GpuOpKind::Memset: return "memset";
    case GpuOpKind::Kernel: return "kernel";
    case GpuOpKind::Sync: return "sync";
    case GpuOpKind::Migration: return "migration";
  }
  return "gpu";
}

}  // namespace

uint32_t Lanes::place(uint64_t start, uint64_t end) {
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

TrackTable make_tracks(uint64_t host_pid, const std::map<uint32_t, uint32_t>& lanes_of_thread,
                       const std::map<GpuGroup, uint32_t>& lanes_of_group) {
  TrackTable t;
  uint64_t tid = 1;
  for (const auto& [thread, lanes] : lanes_of_thread) {
    t.thread_tid[thread] = tid;
    for (uint32_t l = 0; l < lanes; ++l) {
      std::string name = "host thread " + std::to_string(thread);
      if (l) name += " (overlap " + std::to_string(l) + ")";
      t.host.push_back({host_pid, tid++, std::move(name)});
    }
  }
  std::map<uint32_t, uint64_t> next_tid;  // device -> next tid
  for (const auto& [g, lanes] : lanes_of_group) {
    t.group_track[g] = t.gpu.size();
    for (uint32_t l = 0; l < lanes; ++l) {
      std::string name =
          g.stream == kNoStream ? std::string("synchronization (no stream)") : "stream " + std::to_string(g.stream);
      if (g.sync && g.stream != kNoStream) name += ": synchronization";
      if (l) name += " (overlap " + std::to_string(l) + ")";
      if (l) ++t.overlap_tracks;
      uint64_t& device_tid = next_tid.try_emplace(g.device, 1).first->second;
      t.gpu.push_back({kGpuPidBase + g.device, device_tid++, std::move(name)});
    }
  }
  return t;
}

std::set<SiteKey> suppressed_keys(const ReportData& data) {
  std::set<SiteKey> keys;
  for (const SiteRow& r : data.suppressed) {
    keys.emplace(r.site.known() ? r.site.where() + "|" + r.site.frame.function : "?", static_cast<int>(r.rule), r.api);
  }
  return keys;
}

SiteKey site_key(const std::vector<CallSite>& sites, uint32_t stack, rules::RuleId rule, const std::string& api) {
  CallSite site;
  if (stack > 0 && stack <= sites.size()) site = sites[stack - 1];
  return {site.known() ? site.where() + "|" + site.frame.function : "?", static_cast<int>(rule), api};
}

std::string_view api_name(const std::vector<std::string>& api_names, const ApiCall& c, std::string& made) {
  if (c.name < api_names.size()) return api_names[c.name];
  made = "api#" + std::to_string(c.name);
  return made;
}

std::string api_name(const std::vector<std::string>& api_names, const ApiCall& c) {
  std::string made;
  return std::string(api_name(api_names, c, made));
}

void append_call_label(std::string& out, std::string_view api, const ApiCall& c) {
  char buf[24];
  out.append(api).append(" (correlation ");
  out.append(buf, std::to_chars(buf, buf + sizeof buf, c.correlation_id).ptr).append(", host thread ");
  out.append(buf, std::to_chars(buf, buf + sizeof buf, c.thread).ptr).append(")");
}

std::string call_label(std::string_view api, const ApiCall& c) {
  std::string out;
  append_call_label(out, api, c);
  return out;
}

FindingDraw finding_draw(const EventLog& log, const Finding& f) {
  return {f.rule, f.level, f.held_ns, f.waited_ns, f.own_ns, f.gpu_delay_ns, evidence_text(log, f)};
}

// Microseconds with exactly three decimals: the nanoseconds survive, and every importer reads the same number.
void Writer::us(uint64_t ns) {
  const auto frac = static_cast<unsigned>(ns % 1000);
  const char decimals[] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                           static_cast<char>('0' + frac % 10)};
  o_ << ns / 1000 << std::string_view(decimals, sizeof decimals);
}

// The text is handed to the stream between events, in blocks of about this size: one write(2) each for a file.
constexpr size_t kBlockBytes = size_t{1} << 20;

void Writer::begin_event() {
  o_.spill(kBlockBytes);
  o_ << (first_ ? "\n" : ",\n");
  first_ = false;
}

void Writer::where(uint64_t pid, uint64_t tid) { o_ << ", \"pid\": " << pid << ", \"tid\": " << tid; }

void Writer::meta(std::string_view name, uint64_t pid, const uint64_t* tid, std::string_view key,
                  std::string_view value) {
  begin_event();
  o_ << "{\"name\": \"" << name << "\", \"ph\": \"M\", \"pid\": " << pid;
  if (tid) o_ << ", \"tid\": " << *tid;
  o_ << ", \"args\": {\"" << key << "\": " << value << "}}";
}

void Writer::metadata(const RunInfo& run, uint64_t host_pid, const TrackTable& tracks) {
  std::string program(base_name(run.program));
  if (program.empty()) program = "program";
  meta("process_name", host_pid, nullptr, "name", json_string(program + " (host)"));
  meta("process_sort_index", host_pid, nullptr, "sort_index", "0");  // the host first, then the GPUs in order
  uint64_t sort = 0;
  for (const Track& t : tracks.host) {
    meta("thread_name", t.pid, &t.tid, "name", json_string(t.name));
    meta("thread_sort_index", t.pid, &t.tid, "sort_index", std::to_string(sort++));
  }
  uint64_t pid = 0;
  for (const Track& t : tracks.gpu) {
    if (t.pid != pid) {
      pid = t.pid;
      const uint64_t device = pid - kGpuPidBase;
      std::string name = "GPU " + std::to_string(device);
      if (!run.gpu.empty()) name += " (" + run.gpu + ")";
      meta("process_name", pid, nullptr, "name", json_string(name));
      meta("process_sort_index", pid, nullptr, "sort_index", std::to_string(device + 1));
      sort = 0;
    }
    meta("thread_name", t.pid, &t.tid, "name", json_string(t.name));
    meta("thread_sort_index", t.pid, &t.tid, "sort_index", std::to_string(sort++));
  }
}

void Writer::call(const EventLog& log, const ApiCall& c, uint64_t pid, uint64_t tid, const std::vector<FindingDraw>& fs,
                  const std::string& suppressed) {
  const uint64_t end = end_of(c.start_ns, c.end_ns);
  std::string made;
  const std::string_view api = api_name(log.api_names, c, made);
  const bool flagged = !fs.empty(), hidden = !flagged && !suppressed.empty();
  begin_event();
  o_ << "{\"name\": " << q(api) << ", \"cat\": \""
     << (flagged  ? "cuda_api,flagged"
         : hidden ? "cuda_api,suppressed"
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
    const NvtxRange& r = nvtx_range(log, c.nvtx_range);
    o_ << ", \"nvtx_range\": " << q(r.name);
    if (!r.domain.empty()) o_ << ", \"nvtx_domain\": " << q(r.domain);
    if (r.parent != 0) o_ << ", \"nvtx_path\": " << q(nvtx_path(log, c.nvtx_range));
  }
  if (c.end_ns <= c.start_ns) o_ << ", \"note\": " << q(zero_note(c.start_ns, c.end_ns));
  if (flagged) {
    // Several findings on one call (a host finding and a legacy-stream one): each field lists them in order.
    std::string rule, level, evidence, fix;
    uint64_t gpu_delay = 0;
    for (const FindingDraw& f : fs) {
      const std::string sep = rule.empty() ? "" : "; ";
      rule += sep + std::string(rules::rule(f.rule).id);
      level += sep + std::string(rules::level_name(f.level));
      evidence += sep + f.evidence;
      fix += sep + std::string(rules::rule(f.rule).fix);
      gpu_delay = std::max(gpu_delay, f.gpu_delay_ns);
    }
    const FindingDraw& f0 = fs.front();
    o_ << ", \"rule\": " << q(rule) << ", \"level\": " << q(level) << ", \"held\": " << q(format_duration(f0.held_ns))
       << ", \"held_ns\": " << f0.held_ns << ", \"waited_ns\": " << f0.waited_ns << ", \"own_ns\": " << f0.own_ns;
    if (gpu_delay) o_ << ", \"gpu_delay\": " << q(format_duration(gpu_delay));
    o_ << ", \"evidence\": " << q(evidence) << ", \"fix\": " << q(fix);
  } else if (hidden) {
    o_ << ", \"suppressed\": " << q(suppressed);
  }
  o_ << "}}";
  // The stall, where it ends: one mark per host finding at the call's return (GPU-side findings mark the delayed
  // GPU work instead: the host was not held).
  for (const FindingDraw& f : fs) {
    if (f.rule == rules::RuleId::LegacyStreamSerialization) continue;
    begin_event();
    o_ << "{\"name\": " << q("blocked: " + std::string(rules::rule(f.rule).id))
       << ", \"cat\": \"flagged\", \"ph\": \"i\", \"s\": \"t\", \"ts\": ";
    us(rel(end));
    where(pid, tid);
    o_ << ", \"args\": {\"call\": " << q(call_label(api, c)) << ", \"held\": " << q(format_duration(f.held_ns))
       << ", \"waited\": " << q(format_duration(f.waited_ns)) << ", \"own\": " << q(format_duration(f.own_ns))
       << ", \"level\": " << q(rules::level_name(f.level)) << "}}";
    ++flagged_marks_;
  }
}

void Writer::mark(const Mark& m, uint64_t pid, uint64_t tid) {
  std::string_view name = "context created";
  if (m.kind == MarkKind::ModuleLoaded) name = "module loaded";
  if (m.kind == MarkKind::ContextDestroyed) name = "context destroyed";
  begin_event();
  o_ << "{\"name\": \"" << name << "\", \"cat\": \"cuda_driver\", \"ph\": \"i\", \"s\": \"t\", \"ts\": ";
  us(rel(m.time_ns));
  where(pid, tid);
  o_ << "}";
}

const std::string& Writer::demangled(const std::string& name) {
  if (last_demangled_ && last_demangled_->first == name) return last_demangled_->second;
  auto it = demangled_.find(name);
  if (it == demangled_.end()) it = demangled_.emplace(name, demangle(name)).first;
  last_demangled_ = &*it;
  return it->second;
}

void Writer::op(const GpuOp& op, const Track& t, const std::string& call, const std::vector<NoteDraw>& notes,
                const FlowDraw* flow, const std::vector<DelayDraw>& delayed) {
  const uint64_t end = end_of(op.start_ns, op.end_ns);
  const std::string* shown = op.kind == GpuOpKind::Kernel && !op.name.empty() ? &demangled(op.name.str()) : nullptr;
  std::string made;  // a name made for this op (the others are a kernel's, or constants)
  std::string_view name;
  switch (op.kind) {
    case GpuOpKind::Memcpy:
      name = made = "memcpy " + std::string(copy_kind_text(op.copy_kind)) + " " + format_bytes(op.bytes);
      break;
    case GpuOpKind::Memset: name = made = "memset " + format_bytes(op.bytes); break;
    case GpuOpKind::Kernel: name = shown ? std::string_view(*shown) : "kernel"; break;
    case GpuOpKind::Sync: name = sync_type_text(op.sync_type); break;
    case GpuOpKind::Migration:
      name = made = std::string("migration ") + (op.copy_kind == 2 ? "DtoH " : "HtoD ") + format_bytes(op.bytes);
      break;
  }
  begin_event();
  o_ << "{\"name\": " << q(name) << ", \"cat\": \"" << op_category(op.kind) << "\", \"ph\": \"X\", \"ts\": ";
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
    o_ << ", \"copy_kind\": \"" << copy_kind_text(op.copy_kind) << "\", \"memory\": \"" << memory_kind_text(op.src_kind)
       << " -> " << memory_kind_text(op.dst_kind) << "\"";
  }
  if (op.kind == GpuOpKind::Memset) o_ << ", \"memory\": \"" << memory_kind_text(op.dst_kind) << "\"";
  if (shown && *shown != op.name.str()) o_ << ", \"mangled\": " << q(op.name.str());
  if (!call.empty()) o_ << ", \"call\": " << q(call);
  if (op.end_ns <= op.start_ns) o_ << ", \"note\": " << q(zero_note(op.start_ns, op.end_ns));
  if (!notes.empty()) {
    std::map<NoteKind, std::string> text;
    for (const NoteDraw& note : notes) {
      std::string& s = text[note.kind];
      if (!s.empty()) s += "; ";
      s += note.text;
    }
    static constexpr std::string_view kKey[] = {"released", "held_up", "serialized"};
    for (const auto& [kind, s] : text) o_ << ", \"" << kKey[static_cast<size_t>(kind)] << "\": " << q(s);
  }
  o_ << "}}";

  // The arrow from the call to the work it enqueued (synchronization records are waits, not enqueued work).
  if (flow) {
    if (flow->call_end - flow->call_start > kFlowInset && end - op.start_ns > kFlowInset) {
      begin_event();
      o_ << "{\"name\": \"enqueue\", \"cat\": \"cuda_flow\", \"ph\": \"s\", \"id\": " << flow->id << ", \"ts\": ";
      us(rel(flow->call_start) + kFlowInset);
      where(flow->call_pid, flow->call_tid);
      o_ << "}";
      begin_event();
      o_ << "{\"name\": \"enqueue\", \"cat\": \"cuda_flow\", \"ph\": \"f\", \"bp\": \"e\", \"id\": " << flow->id
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
  for (const DelayDraw& d : delayed) {
    begin_event();
    o_ << "{\"name\": " << q("delayed: " + std::string(rules::rule(d.rule).id))
       << ", \"cat\": \"flagged\", \"ph\": \"i\", \"s\": \"t\", \"ts\": ";
    us(rel(op.start_ns));
    where(t.pid, t.tid);
    o_ << ", \"args\": {\"call\": " << q(d.call_label) << ", \"gpu_delay\": " << q(format_duration(d.gpu_delay_ns))
       << ", \"level\": " << q(rules::level_name(d.level)) << ", \"evidence\": " << q(d.evidence) << "}}";
    ++flagged_marks_;
  }
}

void Writer::other_data(const RunInfo& r, const Counts& n) {
  o_ << "\"displayTimeUnit\": \"ns\",\n\"otherData\": {\"generator\": \"asynccheck\", \"program\": " << q(r.program)
     << ", \"pid\": " << r.pid << ", \"gpu\": " << q(r.gpu) << ", \"driver\": " << q(r.driver)
     << ", \"monitoring\": " << q(r.monitoring) << ", \"complete\": " << (r.complete ? "true" : "false")
     << ", \"dropped_records\": " << r.dropped_records << ", \"unanalyzed_calls\": " << r.unanalyzed_calls
     << ", \"threshold_ns\": " << r.threshold_ns << ", \"cost_threshold_ns\": " << r.cost_threshold_ns
     << ", \"time_origin_ns\": " << origin_ << ", \"gpu_pid_base\": " << kGpuPidBase << ", \"calls\": " << n.calls
     << ", \"gpu_operations\": " << n.ops << ", \"gpu_operations_untimed\": " << n.untimed_ops
     << ", \"findings\": " << n.findings - n.suppressed << ", \"findings_suppressed\": " << n.suppressed
     << ", \"flagged_marks\": " << flagged_marks_ << ", \"flows\": " << flows_
     << ", \"flows_skipped_too_short\": " << flows_skipped_ << ", \"overlap_tracks\": " << n.overlap_tracks << "}\n}\n";
  o_.spill(0);
}

}  // namespace asynccheck::report::trace
