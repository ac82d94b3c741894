// The Chrome trace (`--trace`) written as the run goes, while the analysis streams: the events are drawn as the
// analysis lets them go (analysis/streaming.h: ReleaseSink), into a temporary file of their own, and the trace is
// written from it at the end, with what only the end knows: the tracks (how many lanes each thread and stream
// needed), the time origin, the marks, and which sites a suppression hides (decided once the stacks are symbolized).
// It holds the lanes still open per thread and stream, and the calls and operations of the analysis' window: never
// the run. The events are the same as those of the whole log's trace (trace.cpp), in another order (as the analysis
// lets them go), and the flow ids are numbered in that order.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/feed.h"
#include "analysis/flat_map.h"
#include "analysis/streaming.h"
#include "report/report.h"
#include "report/trace_draw.h"

namespace asynccheck::report {

class TraceStream : public EventSink, public ReleaseSink {
 public:
  TraceStream() = default;
  TraceStream(const TraceStream&) = delete;
  TraceStream& operator=(const TraceStream&) = delete;
  ~TraceStream() override;

  // `events`: the temporary file of drawn events (made anew, unlinked at once, read back through the open file). `api_names`: the watched APIs'
  // names (calls are labelled as they are let go).
  bool open(const std::string& events, const std::vector<std::string>& api_names, std::string& error);
  // Where the events given to the analysis go as well (a recording written as the run goes).
  void chain(EventSink* next) { next_ = next; }

  // EventSink: the calls as the analysis is given them, in start order: each is placed on a lane of its thread.
  void write(const CallVector& calls, const OpVector& ops) override;
  void take(CallVector&& calls, OpVector&& ops) override;
  void finishing() override;
  void advanced(uint64_t horizon_ns, uint64_t margin_ns, const std::vector<Mark>& marks) override;
  // ReleaseSink.
  void judged(const EventLog& window, const std::vector<Finding>& findings) override;
  void ops_released(const EventLog& window, const std::vector<char>& keep) override;
  void calls_released(const EventLog& window, const std::vector<char>& keep) override;

  // Writes the trace to `out` from the events drawn so far. `data`: the report of the run (its run, API and NVTX
  // names, marks, stacks and symbols, the sites a suppression hid).
  bool close(std::ostream& out, const ReportData& data, std::string& error);

 private:
  using CallId = std::tuple<uint64_t, uint64_t, uint32_t>;                   // start, correlation, thread
  using OpId = std::tuple<uint64_t, uint64_t, uint32_t, uint64_t, uint8_t>;  // as StreamingAnalysis keeps it
  using Order = std::tuple<uint64_t, uint64_t, uint32_t>;                    // a finding's: its call's, then its own
  static CallId id_of(const ApiCall& c) { return {c.start_ns, c.correlation_id, c.thread}; }
  static OpId id_of(const GpuOp& o) {
    return {o.start_ns, o.end_ns, o.stream_id, o.correlation_id, static_cast<uint8_t>(o.kind)};
  }
  uint32_t key_of(const ApiCall& c, rules::RuleId rule);
  void place(const ApiCall& c);  // on a lane of its thread
  void place_all(const CallVector& calls);
  void see(uint64_t t);
  std::string label(const ApiCall& c) const;
  uint32_t lane_of(const ApiCall& c) const;
  void find_enqueuers(const EventLog& window, const std::vector<char>& keep);
  static constexpr uint32_t kNone = ~uint32_t{0};
  void put_name(const KernelName& name);
  void spill(size_t above);  // writes the buffered records out once there are more than `above` bytes

  // The last record's times, correlation ids and stream: the next one's are written as differences from them.
  struct Previous {
    uint64_t call_start = 0, call_corr = 0, stream = 0, op_start = 0, op_corr = 0;
  };

  struct Note {
    Order order;
    uint32_t key;  // the finding's site (keys_): hidden when a suppression hides it
    trace::NoteDraw note;
  };
  struct Delay {
    Order order;
    uint32_t key;
    trace::DelayDraw delay;
  };

  std::FILE* file_ = nullptr;
  std::string out_;  // records not written to file_ yet
  Previous sent_;
  std::unordered_map<KernelName, uint32_t> op_names_;  // the kernels' names, numbered as met
  FlatMap<uint32_t> enqueuer_;  // ops_released(): the call that enqueued each op let go, kept from step to step
  std::string path_, error_;
  std::vector<std::string> api_names_;
  EventSink* next_ = nullptr;
  bool any_time_ = false;
  uint64_t origin_ = 0;
  std::map<uint32_t, trace::Lanes> thread_lanes_;
  std::map<trace::GpuGroup, trace::Lanes> group_lanes_;
  // The lanes of the calls given to the analysis and not let go yet, but for lane 0 (most calls: a thread's calls
  // overlap only when they nest, and those share a lane): each call is looked up as it goes, and a map of the window
  // would cost each a node, or a hash table a cache miss per call.
  std::map<CallId, uint32_t> lane_of_;
  std::map<CallId, std::vector<std::pair<uint32_t, trace::FindingDraw>>> findings_;  // judged, not let go yet
  std::map<OpId, std::vector<Note>> notes_;
  std::map<OpId, std::vector<Delay>> delayed_;
  // Sites (stack, rule, API) of the findings, numbered as met.
  std::map<std::tuple<uint32_t, int, std::string>, uint32_t> keys_;
  uint64_t calls_ = 0, ops_ = 0, untimed_ = 0, findings_made_ = 0;
};

// Where the drawn events of a trace written to `trace` (the trace option, "-" for standard output) wait until the
// end: beside it, or in the temporary directory for standard output.
std::string trace_events_path(const std::string& trace, int pid, int64_t rank);

// Writes `stream`'s trace to `path` (the trace option: %p and %r expanded; "-" for standard output), through a
// temporary file beside it moved into place when complete.
bool write_streamed_trace(TraceStream& stream, const std::string& path, bool overwrite, int pid, int64_t rank,
                          const ReportData& data, std::string& error);

}  // namespace asynccheck::report
