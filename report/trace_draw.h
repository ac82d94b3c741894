// The Chrome trace's events, one at a time, from what each one draws (docs/report-format.md, "Chrome trace"): shared
// by the trace written from a whole log (trace.cpp) and the one written as the run goes (trace_stream.h), so that
// both write the same events for the same run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "analysis/events.h"
#include "analysis/finding.h"
#include "analysis/text.h"
#include "report/report.h"

namespace asynccheck::report::trace {

// The host process keeps the program's real pid. Each GPU is a process of its own with pid kGpuPidBase + device:
// Linux pids never exceed PID_MAX_LIMIT (2^22), so these cannot clash with the program's pid, and they still fit the
// unsigned 32-bit pid that Perfetto's JSON importer reads.
constexpr uint64_t kGpuPidBase = uint64_t{1} << 30;

// The stream id CUPTI gives synchronization records that belong to no stream (context and event synchronization).
constexpr uint32_t kNoStream = 0xFFFFFFFFu;

inline uint64_t end_of(uint64_t start, uint64_t end) { return end > start ? end : start; }
inline bool timed(const GpuOp& op) { return op.start_ns != 0; }  // CUPTI leaves 0 in records it could not time

// Places intervals, given in order of start (longest first among equal starts), on the fewest lanes such that each
// lane draws correctly: with `nest`, intervals on a lane may contain one another but never partially overlap (a
// thread's calls nest like a call stack); without, they may not overlap at all (a stream runs one operation at a
// time, and an operation drawn inside another would be a lie).
class Lanes {
 public:
  explicit Lanes(bool nest) : nest_(nest) {}
  uint32_t place(uint64_t start, uint64_t end);
  uint32_t count() const { return static_cast<uint32_t>(open_.empty() ? 1 : open_.size()); }

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

// A GPU operation's group: its device, its stream, and whether it is a synchronization record (drawn beside the
// stream's work: a host wait overlaps the work it waits for). Each group gets one track per lane.
struct GpuGroup {
  uint32_t device = 0, stream = 0;
  bool sync = false;
  bool operator<(const GpuGroup& o) const {
    return device != o.device ? device < o.device : stream != o.stream ? stream < o.stream : sync < o.sync;
  }
};
inline GpuGroup group_of(const GpuOp& op) { return {op.device, op.stream_id, op.kind == GpuOpKind::Sync}; }

// The tracks of the host threads (lanes per thread, in thread order) and of the GPU groups (lanes per group, in group
// order), and the tid of each thread's and group's first lane.
struct TrackTable {
  std::vector<Track> host, gpu;
  std::map<uint32_t, uint64_t> thread_tid;
  std::map<GpuGroup, size_t> group_track;  // group -> index into gpu of its first lane
  uint64_t overlap_tracks = 0;             // extra GPU lanes
};
TrackTable make_tracks(uint64_t host_pid, const std::map<uint32_t, uint32_t>& lanes_of_thread,
                       const std::map<GpuGroup, uint32_t>& lanes_of_group);

// A finding as a flagged call draws it.
struct FindingDraw {
  rules::RuleId rule = rules::RuleId::UndocumentedBlock;
  rules::Level level = rules::Level::Warning;
  uint64_t held_ns = 0, waited_ns = 0, own_ns = 0, gpu_delay_ns = 0;
  std::string evidence;
};

// What a finding says about a GPU operation other than the one it marks: released (the call that returned when this
// work ended), held_up (a call whose own work waited for this first), serialized (a legacy-stream command whose
// serialization delayed this work or was delayed by it).
enum class NoteKind : uint8_t { Released, HeldUp, Serialized };
struct NoteDraw {
  NoteKind kind = NoteKind::Released;
  std::string text;
};

// A GPU-side finding's mark on the work it delayed.
struct DelayDraw {
  rules::RuleId rule = rules::RuleId::LegacyStreamSerialization;
  rules::Level level = rules::Level::Warning;
  uint64_t gpu_delay_ns = 0;
  std::string call_label, evidence;
};

// The arrow from a call to the work it enqueued.
struct FlowDraw {
  uint64_t id = 0;
  uint64_t call_start = 0, call_end = 0, call_pid = 0, call_tid = 0;
};

// A finding's site as aggregate() groups findings: (where|function or "?", rule, api). A suppression hides sites.
using SiteKey = std::tuple<std::string, int, std::string>;
std::set<SiteKey> suppressed_keys(const ReportData& data);
// `sites`: call_sites() of the log, by stack id - 1.
SiteKey site_key(const std::vector<CallSite>& sites, uint32_t stack, rules::RuleId rule, const std::string& api);

// How a call is named in the arguments of other events: returned, or appended to `out` (a label made per event in a
// buffer of the caller's costs no allocation).
std::string call_label(std::string_view api, const ApiCall& c);
void append_call_label(std::string& out, std::string_view api, const ApiCall& c);
// The API's name from the log's table: a copy, or a view of the table (or, for a number it does not hold, of `made`).
std::string api_name(const std::vector<std::string>& api_names, const ApiCall& c);
std::string_view api_name(const std::vector<std::string>& api_names, const ApiCall& c, std::string& made);
// The findings of `f` as the trace draws them (the evidence text read from `log`, whose ops `f` indexes).
FindingDraw finding_draw(const EventLog& log, const Finding& f);
// The notes of one operation, from the findings' (order, note) pairs: in the order of the findings (by `order`,
// then kind), each (finding, kind) once.
template <typename Order>
std::vector<NoteDraw> sorted_notes(std::vector<std::pair<Order, NoteDraw>> notes);

// A string written quoted, escaped as JSON (json_string).
struct Quoted {
  std::string_view text;
};

// The JSON's text, formatted by a Text (analysis/text.h: a trace has millions of events of a dozen fields each) and
// written to the stream a block at a time. What JSON adds: strings quoted and escaped, and no bool or one-byte
// integer written as a number.
class JsonText {
 public:
  explicit JsonText(std::ostream& out) : out_(out) {}
  JsonText(const JsonText&) = delete;
  JsonText& operator=(const JsonText&) = delete;
  ~JsonText() { spill(0); }
  JsonText& operator<<(std::string_view s) {
    t_ << s;
    return *this;
  }
  JsonText& operator<<(char c) {
    t_ << c;
    return *this;
  }
  JsonText& operator<<(Quoted q) {
    t_.flush();  // append_json_string appends to the string, after what the Text holds
    append_json_string(b_, q.text);
    return *this;
  }
  template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int>>>
  JsonText& operator<<(Int v) {
    static_assert(sizeof(Int) > 1, "std::ostream writes a char or a bool as such, not as a number");
    t_ << v;
    return *this;
  }
  // Writes the buffered text to the stream once there is more than `above` bytes of it.
  void spill(size_t above) {
    if (t_.size() <= above) return;
    t_.flush();
    out_.write(b_.data(), static_cast<std::streamsize>(b_.size()));
    b_.clear();
  }

 private:
  std::ostream& out_;
  std::string b_;  // what t_ flushed, not yet written to out_
  Text t_{b_};
};

// Writes the events, one at a time, with timestamps relative to `origin` (the earliest of the run).
class Writer {
 public:
  Writer(std::ostream& out, uint64_t origin) : o_(out), origin_(origin) {}
  void begin() { o_ << "{\"traceEvents\": ["; }
  void metadata(const RunInfo& run, uint64_t host_pid, const TrackTable& tracks);
  // `log`: the API names and NVTX names the call's arguments read. `findings` empty and `suppressed` not: a call
  // whose only findings a suppression hid (the first one's rule).
  void call(const EventLog& log, const ApiCall& c, uint64_t pid, uint64_t tid, const std::vector<FindingDraw>& findings,
            const std::string& suppressed);
  void mark(const Mark& m, uint64_t pid, uint64_t tid);
  // `call`: the label of the call that enqueued it (empty: none); `flow` null: no arrow (a sync record, or none).
  void op(const GpuOp& op, const Track& t, const std::string& call, const std::vector<NoteDraw>& notes,
          const FlowDraw* flow, const std::vector<DelayDraw>& delayed);
  void end() { o_ << (first_ ? "],\n" : "\n],\n"); }
  struct Counts {
    uint64_t calls = 0, ops = 0, untimed_ops = 0, findings = 0, suppressed = 0, overlap_tracks = 0;
  };
  void other_data(const RunInfo& run, const Counts& counts);

 private:
  uint64_t rel(uint64_t t) const { return t > origin_ ? t - origin_ : 0; }
  void us(uint64_t ns);
  void begin_event();
  void where(uint64_t pid, uint64_t tid);
  void meta(std::string_view name, uint64_t pid, const uint64_t* tid, std::string_view key, std::string_view value);
  const std::string& demangled(const std::string& name);

  JsonText o_;
  uint64_t origin_;
  bool first_ = true;
  std::map<std::string, std::string> demangled_;
  const std::pair<const std::string, std::string>* last_demangled_ = nullptr;  // runs of one kernel are common
  uint64_t flows_ = 0, flows_skipped_ = 0, flagged_marks_ = 0;
};

template <typename Order>
std::vector<NoteDraw> sorted_notes(std::vector<std::pair<Order, NoteDraw>> notes) {
  auto key = [](const std::pair<Order, NoteDraw>& n) { return std::make_pair(n.first, n.second.kind); };
  std::sort(notes.begin(), notes.end(), [&](const auto& x, const auto& y) { return key(x) < key(y); });
  std::vector<NoteDraw> out;
  for (size_t i = 0; i < notes.size(); ++i) {
    if (i && key(notes[i]) == key(notes[i - 1])) continue;
    out.push_back(std::move(notes[i].second));
  }
  return out;
}

}  // namespace asynccheck::report::trace
