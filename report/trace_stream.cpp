#include "report/trace_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <ostream>
#include <set>

namespace asynccheck::report {
namespace {

using namespace trace;

// The temporary file: records of the events drawn (read back only by close(), by the same build). It is most of
// what drawing costs the analysis thread, so it is kept small: numbers as LEB128 varints; times, correlation ids and
// stream handles as the difference from the previous record's (consecutive events are close); kernel names once,
// then by number; the label of the call that enqueued an operation as what close() makes it from; the flow ids
// implied by the order. Written through a buffer of our own, a block at a time.
uint64_t zigzag(uint64_t diff) { return (diff << 1) ^ static_cast<uint64_t>(static_cast<int64_t>(diff) >> 63); }
uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (uint64_t{0} - (z & 1)); }

void put(std::string& out, uint64_t v) {
  char bytes[10];
  size_t n = 0;
  for (; v >= 0x80; v >>= 7) bytes[n++] = static_cast<char>(v | 0x80);
  bytes[n++] = static_cast<char>(v);
  out.append(bytes, n);
}
void put(std::string& out, const std::string& s) {
  put(out, s.size());
  out += s;
}
// `v` as its difference from `prev`, which becomes `v`.
void put_delta(std::string& out, uint64_t v, uint64_t& prev) {
  put(out, zigzag(v - prev));
  prev = v;
}

// Longer than any string drawn (a kernel's name, a finding's evidence).
constexpr uint64_t kMaxString = uint64_t{1} << 24;

struct Reader {
  std::FILE* f;
  bool ok = true;
  bool damaged = false;  // a number cut short by the end of the file, or longer than any we write
  uint64_t u() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const int b = ok ? getc_unlocked(f) : EOF;
      if (b == EOF || shift >= 64) {
        damaged = damaged || (ok && (shift > 0 || b != EOF));
        ok = false;
        return 0;
      }
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  }
  uint64_t delta(uint64_t& prev) { return prev += unzigzag(u()); }
  std::string s() {
    const uint64_t n = u();
    ok = ok && n <= kMaxString;  // a damaged file must not make us allocate what it says
    std::string out(ok ? n : 0, '\0');
    ok = ok && std::fread(out.data(), 1, out.size(), f) == out.size();
    return out;
  }
};

constexpr uint64_t kCall = 'C', kOp = 'O';
// What an operation's record says of the call that enqueued it.
constexpr uint64_t kNoCall = 0, kCallOnly = 1, kCallAndFlow = 2;
constexpr size_t kSpillBytes = size_t{1} << 16;

// A kernel's name: its number, and the name itself the first time.
KernelName op_name(Reader& r, std::vector<KernelName>& names) {
  const uint64_t id = r.u();
  if (r.ok && id == names.size()) names.push_back(KernelName(r.s()));  // interned once, not once per operation
  if (r.ok && id >= names.size()) {                                    // a number no name was written for
    r.ok = false;
    r.damaged = true;
  }
  return id < names.size() ? names[id] : KernelName();
}

void put(std::string& out, const FindingDraw& d) {
  for (uint64_t v : {static_cast<uint64_t>(d.rule), static_cast<uint64_t>(d.level), d.held_ns, d.waited_ns, d.own_ns,
                     d.gpu_delay_ns})
    put(out, v);
  put(out, d.evidence);
}
FindingDraw finding(Reader& r) {
  FindingDraw d;
  d.rule = static_cast<rules::RuleId>(r.u());
  d.level = static_cast<rules::Level>(r.u());
  d.held_ns = r.u();
  d.waited_ns = r.u();
  d.own_ns = r.u();
  d.gpu_delay_ns = r.u();
  d.evidence = r.s();
  return d;
}

}  // namespace

TraceStream::~TraceStream() {
  if (file_) std::fclose(file_);  // not closed: the trace was never written
}

bool TraceStream::open(const std::string& events, const std::vector<std::string>& api_names, std::string& error) {
  // A file of our own, never one that was there (another copy of the library in this process, a link).
  const int fd = ::open(events.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) file_ = fdopen(fd, "w+b");
  // Unbuffered (out_ is the buffer, written whole by spill()): a child forked without exec shares the file and its
  // offset, and its exit() would flush a stdio buffer's copy into the middle of our records.
  if (file_) setvbuf(file_, nullptr, _IONBF, 0);
  if (!file_) {
    error = "cannot write '" + events + "': " + std::strerror(errno);
    if (fd >= 0) {
      ::close(fd);
      std::remove(events.c_str());
    }
    return false;
  }
  // Unlinked at once, read back through the open file: nothing is left behind by a process that never reaches its
  // report (a crash, SIGKILL, a helper that writes none), and a program exec'd without a fork (`sh -c prog`: the same
  // pid) finds no file of the shell's in its way.
  ::unlink(events.c_str());
  path_ = events;
  api_names_ = api_names;
  return true;
}

void TraceStream::see(uint64_t t) {
  if (t == 0) return;
  origin_ = any_time_ ? std::min(origin_, t) : t;
  any_time_ = true;
}

uint32_t TraceStream::lane_of(const ApiCall& c) const {
  if (lane_of_.empty()) return 0;
  const auto l = lane_of_.find(id_of(c));
  return l == lane_of_.end() ? 0 : l->second;
}

std::string TraceStream::label(const ApiCall& c) const { return call_label(api_name(api_names_, c), c); }

uint32_t TraceStream::key_of(const ApiCall& c, rules::RuleId rule) {
  return keys_.try_emplace({c.stack, static_cast<int>(rule), api_name(api_names_, c)}, keys_.size()).first->second;
}

// In start order (the feed gives the analysis its calls so): lanes are placed as the whole log's trace places them.
// Each thread's calls are placed in order of start, the longest first among equal starts. The feed's calls are in
// order of start: they are sorted only when two start together the other way round (a thread's lanes are its own, so
// the threads' calls may be placed interleaved).
void TraceStream::write(const CallVector& calls, const OpVector& ops) {
  if (next_) next_->write(calls, ops);
  place_all(calls);
}

// The copy the feed made goes on to the recording (which keeps it) once the calls are placed.
void TraceStream::take(CallVector&& calls, OpVector&& ops) {
  place_all(calls);
  if (next_) next_->take(std::move(calls), std::move(ops));
}

void TraceStream::finishing() {
  if (next_) next_->finishing();
}

void TraceStream::advanced(uint64_t horizon_ns, uint64_t margin_ns, const std::vector<Mark>& marks) {
  if (next_) next_->advanced(horizon_ns, margin_ns, marks);
}

void TraceStream::place_all(const CallVector& calls) {
  auto before = [](const ApiCall& x, const ApiCall& y) {
    return std::make_pair(x.start_ns, ~end_of(x.start_ns, x.end_ns)) <
           std::make_pair(y.start_ns, ~end_of(y.start_ns, y.end_ns));
  };
  if (std::is_sorted(calls.begin(), calls.end(), before)) {
    for (const ApiCall& c : calls) place(c);
    return;
  }
  std::vector<const ApiCall*> order;
  for (const ApiCall& c : calls) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [&](const ApiCall* x, const ApiCall* y) {
    return x->thread != y->thread ? x->thread < y->thread : before(*x, *y);
  });
  for (const ApiCall* c : order) place(*c);
}

void TraceStream::place(const ApiCall& c) {
  Lanes& lanes = thread_lanes_.try_emplace(c.thread, true).first->second;
  const uint32_t lane = lanes.place(c.start_ns, end_of(c.start_ns, c.end_ns));
  if (lane != 0) {
    lane_of_[id_of(c)] = lane;
  } else if (!lane_of_.empty()) {
    lane_of_.erase(id_of(c));  // a call given twice takes its last lane
  }
}

// Each finding as the call will draw it, and what it says about the work it names (trace.cpp: index()), by the ops'
// identity: the window's indices change as it is pruned.
void TraceStream::judged(const EventLog& window, const std::vector<Finding>& findings) {
  std::map<size_t, uint32_t> ordinal;  // call -> findings of it met so far
  for (const Finding& f : findings) {
    ++findings_made_;
    if (f.below_threshold) continue;  // drawn as an ordinary call: a wait under the threshold
    const ApiCall& c = window.calls[f.call];
    const uint32_t key = key_of(c, f.rule);
    const Order order{c.start_ns, c.correlation_id, ordinal[f.call]++};
    findings_[id_of(c)].push_back({key, finding_draw(window, f)});
    const Evidence& e = f.evidence;
    auto op_at = [&](int64_t x) { return id_of(window.ops[static_cast<size_t>(x)]); };
    if (f.rule == rules::RuleId::LegacyStreamSerialization) {
      const std::string text = std::string(rules::rule(f.rule).id) + " by " + label(c);
      const DelayDraw delay{f.rule, f.level, f.gpu_delay_ns, label(c), evidence_text(window, f)};
      if (e.behind_op >= 0) delayed_[op_at(e.behind_op)].push_back({order, key, delay});
      for (int64_t x : {e.op, e.behind_op}) {
        if (x >= 0) notes_[op_at(x)].push_back({order, key, {NoteKind::Serialized, text}});
      }
      // Started late: its own operation (the first it enqueued) is the delayed one.
      if (e.op >= 0 && e.op != e.behind_op) {
        for (const GpuOp& op : window.ops) {
          if (op.kind == GpuOpKind::Sync) continue;
          if (op.correlation_id != c.correlation_id &&
              (c.driver_correlation_id == 0 || op.correlation_id != c.driver_correlation_id))
            continue;
          delayed_[id_of(op)].push_back({order, key, delay});
          notes_[id_of(op)].push_back({order, key, {NoteKind::Serialized, text}});
          break;
        }
      }
    } else {
      if (e.op >= 0) notes_[op_at(e.op)].push_back({order, key, {NoteKind::Released, label(c)}});
      if (e.behind_op >= 0) notes_[op_at(e.behind_op)].push_back({order, key, {NoteKind::HeldUp, label(c)}});
    }
  }
}

void TraceStream::ops_released(const EventLog& window, const std::vector<char>& keep) {
  if (!file_ || std::find(keep.begin(), keep.end(), 0) == keep.end()) return;
  find_enqueuers(window, keep);
  for (size_t i = 0; i < window.ops.size(); ++i) {
    if (keep[i]) continue;
    const GpuOp& op = window.ops[i];
    ++ops_;
    auto n = notes_.extract(id_of(op));
    auto d = delayed_.extract(id_of(op));
    if (!timed(op)) {
      ++untimed_;
      continue;
    }
    see(op.start_ns);
    const GpuGroup g = group_of(op);
    const uint32_t lane =
        group_lanes_.try_emplace(g, false).first->second.place(op.start_ns, end_of(op.start_ns, op.end_ns));
    put(out_, kOp);
    for (uint64_t v :
         {uint64_t{g.device}, uint64_t{g.stream}, uint64_t{g.sync}, uint64_t{lane}, static_cast<uint64_t>(op.kind),
          uint64_t{op.copy_kind}, uint64_t{op.src_kind}, uint64_t{op.dst_kind}, uint64_t{op.sync_type}, op.bytes})
      put(out_, v);
    put_delta(out_, op.start_ns, sent_.op_start);
    put(out_, zigzag(op.end_ns - op.start_ns));
    put_delta(out_, op.correlation_id, sent_.op_corr);
    put_name(op.name);
    const uint32_t* c = enqueuer_.find(op.correlation_id);
    if (*c == kNone) {
      put(out_, kNoCall);
    } else {
      // The call's label is made by close(), from its API, correlation id and thread.
      const ApiCall& call = window.calls[*c];
      const bool flow = op.kind != GpuOpKind::Sync;
      put(out_, flow ? kCallAndFlow : kCallOnly);
      for (uint64_t v : {uint64_t{call.name}, zigzag(call.correlation_id - op.correlation_id), uint64_t{call.thread}})
        put(out_, v);
      if (flow) {
        for (uint64_t v : {zigzag(call.start_ns - op.start_ns), end_of(call.start_ns, call.end_ns) - call.start_ns,
                           uint64_t{lane_of(call)}})
          put(out_, v);
      }
    }
    put(out_, n.empty() ? 0 : n.mapped().size());
    if (!n.empty()) {
      for (const Note& note : n.mapped()) {
        for (uint64_t v : {std::get<0>(note.order), std::get<1>(note.order), uint64_t{std::get<2>(note.order)},
                           uint64_t{note.key}, static_cast<uint64_t>(note.note.kind)})
          put(out_, v);
        put(out_, note.note.text);
      }
    }
    put(out_, d.empty() ? 0 : d.mapped().size());
    if (!d.empty()) {
      for (const Delay& x : d.mapped()) {
        for (uint64_t v :
             {std::get<0>(x.order), std::get<1>(x.order), uint64_t{std::get<2>(x.order)}, uint64_t{x.key},
              static_cast<uint64_t>(x.delay.rule), static_cast<uint64_t>(x.delay.level), x.delay.gpu_delay_ns})
          put(out_, v);
        put(out_, x.delay.call_label);
        put(out_, x.delay.evidence);
      }
    }
    spill(kSpillBytes);
  }
}

void TraceStream::calls_released(const EventLog& window, const std::vector<char>& keep) {
  if (!file_) return;
  for (size_t i = 0; i < window.calls.size(); ++i) {
    if (keep[i]) continue;
    const ApiCall& c = window.calls[i];
    ++calls_;
    see(c.start_ns);
    const uint32_t lane = lane_of(c);
    if (lane != 0) lane_of_.erase(id_of(c));
    auto f = findings_.extract(id_of(c));
    put(out_, kCall);
    for (uint64_t v : {uint64_t{lane}, uint64_t{c.thread}, uint64_t{c.name}}) put(out_, v);
    put_delta(out_, c.start_ns, sent_.call_start);
    put(out_, zigzag(c.end_ns - c.start_ns));
    put_delta(out_, c.correlation_id, sent_.call_corr);
    put_delta(out_, c.stream, sent_.stream);
    for (uint64_t v : {c.call.bytes, static_cast<uint64_t>(c.result), uint64_t{c.nvtx_range}}) put(out_, v);
    put(out_, f.empty() ? 0 : f.mapped().size());
    if (!f.empty()) {
      for (const auto& [key, draw] : f.mapped()) {
        put(out_, uint64_t{key});
        put(out_, draw);
      }
    }
    spill(kSpillBytes);
  }
}

// The call that enqueued each op let go, by correlation id (a runtime call's or the driver call's it made): the first
// in the window, as the whole log's trace takes the first in the log. Only the ops let go are looked for: the window
// holds many more calls than a step lets go of ops.
void TraceStream::find_enqueuers(const EventLog& window, const std::vector<char>& keep) {
  enqueuer_.clear();
  for (size_t i = 0; i < window.ops.size(); ++i) {
    if (!keep[i]) enqueuer_.try_emplace(window.ops[i].correlation_id, kNone);
  }
  auto met = [&](uint64_t id, uint32_t call) {
    uint32_t* at = enqueuer_.find(id);
    if (at && *at == kNone) *at = call;
  };
  for (uint32_t i = 0; i < window.calls.size(); ++i) {
    met(window.calls[i].correlation_id, i);
    if (window.calls[i].driver_correlation_id != 0) met(window.calls[i].driver_correlation_id, i);
  }
}

void TraceStream::put_name(const KernelName& name) {
  // Interned names (analysis/kernel_name.h): a lookup by pointer.
  const auto [it, made] = op_names_.try_emplace(name, static_cast<uint32_t>(op_names_.size()));
  put(out_, uint64_t{it->second});
  if (made) put(out_, name.str());
}

void TraceStream::spill(size_t above) {
  if (out_.size() <= above) return;
  std::fwrite(out_.data(), 1, out_.size(), file_);  // an error shows in ferror() at close()
  out_.clear();
}

bool TraceStream::close(std::ostream& out, const ReportData& data, std::string& error) {
  const EventLog& log = *data.log;
  // Which sites a suppression hides, now that the stacks are symbolized.
  std::vector<char> hidden(keys_.size(), 0);
  const std::set<SiteKey> hide = suppressed_keys(data);
  if (!hide.empty()) {
    const std::vector<CallSite> sites = call_sites(log, kernel_names(log), data.library_patterns);
    for (const auto& [site, key] : keys_) {
      const auto& [stack, rule, api] = site;
      hidden[key] = hide.count(site_key(sites, stack, static_cast<rules::RuleId>(rule), api)) != 0;
    }
  }
  for (const Mark& m : log.marks) see(m.time_ns);
  std::map<uint32_t, uint32_t> lanes_of_thread;
  for (const Mark& m : log.marks) lanes_of_thread.emplace(m.thread, 1);
  for (const auto& [thread, lanes] : thread_lanes_) lanes_of_thread[thread] = lanes.count();
  std::map<GpuGroup, uint32_t> lanes_of_group;
  for (const auto& [g, lanes] : group_lanes_) lanes_of_group[g] = lanes.count();
  const uint64_t host_pid = log.run.pid > 0 ? static_cast<uint64_t>(log.run.pid) : 1;
  const TrackTable tracks = make_tracks(host_pid, lanes_of_thread, lanes_of_group);

  if (file_) spill(0);
  if (!file_ || std::fflush(file_) != 0 || std::ferror(file_)) {  // a full disk, as the run went
    error = "the trace's events could not be written to '" + path_ + "'";
    return false;
  }
  // Read back through a buffered stream of its own (the writing one is unbuffered: above).
  std::FILE* in = nullptr;
  if (const int rfd = dup(fileno(file_)); rfd >= 0) {
    in = fdopen(rfd, "rb");
    if (!in) ::close(rfd);
  }
  std::fclose(file_);  // written once: the drawn events are no longer needed
  file_ = nullptr;
  if (!in || std::fseek(in, 0, SEEK_SET) != 0) {
    if (in) std::fclose(in);
    error = "the trace's events could not be read back from '" + path_ + "'";
    return false;
  }
  Writer w(out, origin_);
  w.begin();
  w.metadata(log.run, host_pid, tracks);
  Reader r{in};
  // A record is drawn only whole and on the tracks it names: anything else means the file was damaged.
  bool damaged = false;
  auto thread_track = [&](uint32_t thread, uint64_t lane, uint64_t& tid) {
    auto t = tracks.thread_tid.find(thread);
    auto n = lanes_of_thread.find(thread);
    if (t == tracks.thread_tid.end() || n == lanes_of_thread.end() || lane >= n->second) return false;
    tid = t->second + lane;
    return true;
  };
  Previous got;                   // as the records were written
  std::vector<KernelName> names;  // the kernels' names, by number
  std::string call, made;         // an operation's: the label of the call that enqueued it, its API's name if made
  uint64_t suppressed = 0, flows = 0;
  for (uint64_t kind = r.u(); r.ok; kind = r.u()) {
    if (kind == kCall) {
      ApiCall c;
      const uint32_t lane = static_cast<uint32_t>(r.u());
      c.thread = static_cast<uint32_t>(r.u());
      c.name = static_cast<uint16_t>(r.u());
      c.start_ns = r.delta(got.call_start);
      c.end_ns = c.start_ns + unzigzag(r.u());
      c.correlation_id = r.delta(got.call_corr);
      c.stream = r.delta(got.stream);
      c.call.bytes = r.u();
      c.result = static_cast<decltype(c.result)>(r.u());
      c.nvtx_range = static_cast<uint32_t>(r.u());
      std::vector<FindingDraw> shown;
      std::string hidden_rule;
      for (uint64_t k = r.u(); k > 0 && r.ok; --k) {
        const uint64_t key = r.u();
        FindingDraw d = finding(r);
        if (key < hidden.size() && hidden[key]) {
          ++suppressed;
          if (hidden_rule.empty()) hidden_rule = rules::rule(d.rule).id;
        } else {
          shown.push_back(std::move(d));
        }
      }
      uint64_t tid = 0;
      if (!r.ok || !thread_track(c.thread, lane, tid)) {
        damaged = true;
        break;
      }
      w.call(log, c, host_pid, tid, shown, hidden_rule);
    } else if (kind == kOp) {
      GpuOp op;
      GpuGroup g;
      g.device = static_cast<uint32_t>(r.u());
      g.stream = static_cast<uint32_t>(r.u());
      g.sync = r.u() != 0;
      const uint32_t lane = static_cast<uint32_t>(r.u());
      op.device = g.device;
      op.stream_id = g.stream;
      op.kind = static_cast<GpuOpKind>(r.u());
      op.copy_kind = static_cast<uint8_t>(r.u());
      op.src_kind = static_cast<uint8_t>(r.u());
      op.dst_kind = static_cast<uint8_t>(r.u());
      op.sync_type = static_cast<uint8_t>(r.u());
      op.bytes = r.u();
      op.start_ns = r.delta(got.op_start);
      op.end_ns = op.start_ns + unzigzag(r.u());
      op.correlation_id = r.delta(got.op_corr);
      op.name = op_name(r, names);
      const uint64_t enqueued = r.u();
      call.clear();
      FlowDraw flow;
      if (enqueued != kNoCall) {
        ApiCall by;
        by.name = static_cast<uint16_t>(r.u());
        by.correlation_id = op.correlation_id + unzigzag(r.u());
        by.thread = static_cast<uint32_t>(r.u());
        append_call_label(call, api_name(api_names_, by, made), by);
        if (enqueued == kCallAndFlow) {
          flow.id = ++flows;
          flow.call_start = op.start_ns + unzigzag(r.u());
          flow.call_end = flow.call_start + r.u();
          flow.call_pid = host_pid;
          damaged = damaged || !thread_track(by.thread, r.u(), flow.call_tid);
        }
      }
      const bool has_flow = enqueued == kCallAndFlow;
      std::vector<std::pair<Order, NoteDraw>> notes;
      for (uint64_t k = r.u(); k > 0 && r.ok; --k) {
        Order order{r.u(), r.u(), 0};
        std::get<2>(order) = static_cast<uint32_t>(r.u());
        const uint64_t key = r.u();
        NoteDraw note{static_cast<NoteKind>(r.u()), r.s()};
        if (key < hidden.size() && hidden[key]) continue;
        notes.emplace_back(order, std::move(note));
      }
      std::vector<std::pair<Order, DelayDraw>> delays;
      for (uint64_t k = r.u(); k > 0 && r.ok; --k) {
        Order order{r.u(), r.u(), 0};
        std::get<2>(order) = static_cast<uint32_t>(r.u());
        const uint64_t key = r.u();
        DelayDraw d;
        d.rule = static_cast<rules::RuleId>(r.u());
        d.level = static_cast<rules::Level>(r.u());
        d.gpu_delay_ns = r.u();
        d.call_label = r.s();
        d.evidence = r.s();
        if (key < hidden.size() && hidden[key]) continue;
        delays.emplace_back(order, std::move(d));
      }
      // In the order of the findings, each once (trace.cpp: delayed_).
      std::stable_sort(delays.begin(), delays.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      std::vector<DelayDraw> delayed;
      for (size_t k = 0; k < delays.size(); ++k) {
        if (k == 0 || delays[k].first != delays[k - 1].first) delayed.push_back(std::move(delays[k].second));
      }
      auto track = tracks.group_track.find(g);
      auto n = lanes_of_group.find(g);
      if (damaged || !r.ok || track == tracks.group_track.end() || n == lanes_of_group.end() || lane >= n->second ||
          track->second + lane >= tracks.gpu.size()) {
        damaged = true;
        break;
      }
      w.op(op, tracks.gpu[track->second + lane], call, sorted_notes(std::move(notes)), has_flow ? &flow : nullptr,
           delayed);
    } else {
      damaged = true;
      break;
    }
  }
  const bool read = !damaged && !r.damaged && std::feof(in) && !std::ferror(in);
  std::fclose(in);
  if (!read) {
    error = "the trace's events could not be read back from '" + path_ + "'";
    return false;
  }
  for (const Mark& m : log.marks) w.mark(m, host_pid, tracks.thread_tid.at(m.thread));
  w.end();
  Writer::Counts n;
  n.calls = calls_;
  n.ops = ops_;
  n.untimed_ops = untimed_;
  n.findings = findings_made_;
  n.suppressed = suppressed;
  n.overlap_tracks = tracks.overlap_tracks;
  w.other_data(log.run, n);
  return static_cast<bool>(out);
}

std::string trace_events_path(const std::string& trace, int pid, int64_t rank) {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string beside = trace == kStdout ? std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/asynccheck-trace"
                                              : expand_path(trace, pid, rank);
  return beside + ".events." + std::to_string(pid);
}

bool write_streamed_trace(TraceStream& stream, const std::string& path, bool overwrite, int pid, int64_t rank,
                          const ReportData& data, std::string& error) {
  if (path == kStdout) {  // after the program's own output, as the other reports (report.cpp: write_report)
    const bool ok = stream.close(std::cout, data, error);
    std::cout.flush();
    return ok;
  }
  const std::string file = expand_path(path, pid, rank);
  std::string tmp;
  const int fd = open_beside(file, tmp, error);
  if (fd < 0) return false;
  ::close(fd);
  bool ok;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    ok = stream.close(out, data, error);
    out.flush();
    if (ok && !out) {
      error = "cannot write '" + file + "'";
      ok = false;
    }
  }
  if (!ok) {
    unlink(tmp.c_str());
    return false;
  }
  return move_into_place(tmp, file, overwrite, error);
}

}  // namespace asynccheck::report
