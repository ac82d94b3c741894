// Recordings: the captured event stream of one run in a versioned, line-oriented text file. A recording made on
// a GPU machine replays on any machine (CI) into exactly the findings of the live run.
//
//   asynccheck-recording 1
//   run <key>=<value> ...          program, pid, gpu, driver, monitoring, dropped, threshold_ns, ...
//   arg <text>                     one per program argument
//   api <index> <name>             names of the watched APIs, indexed by `call` lines
//   module <base> <end> <bias> <path>  loaded modules, hex addresses
//   stack <id> <frame> ...         interned call stacks, hex return addresses, innermost first
//   pyframe <id> <file> <function> <line>  optional: a Python frame of stack <id> (declared before), innermost first
//   sym <ip> <line> <function> <file>  a resolved frame of a return address (inlined ones: several, innermost first)
//   nvtx <id> <domain> <name> [<parent>]   optional: an NVTX range that `call` lines name, ids 1, 2, ... in order;
//                                  <parent> the id of the range it is nested in (smaller), absent when outermost
//   call <fields...>               one per watched API call (see kCallShape in recording.cpp); an optional last
//                                  field names the call's innermost NVTX range (absent: none)
//   ctxcall <fields...>            optional: a call that earlier versions' compaction kept as context only
//   carried <calls> <ops> <context_creation_ns> <kind_disagreements> <captured_calls> [<outside_range_calls>]
//                                  optional, analyzed log
//   carried_not_observed <rule> <count>                                (analysis/streaming.h): what the analysis
//   carried_site <stack> <name> <rule> <count> <total_ns> <max_ns> <bytes> [<nvtx>]   folded away; see events.h
//                                  Carried (the optional last field: the site's NVTX range, as on `call`)
//   op <fields...>                 one per GPU operation from the activity records
//   mark <kind> <time> <thread>    context creation, module loads
//   step <horizon_ns> <margin_ns>  optional, in a recording written as the run went: its analysis advanced to the
//                                  horizon after the events above it, with the marks above it (streaming.h); an
//                                  offline analysis takes the same steps (analysis/replay.h) rather than hold it whole
//   analyzed                       optional: a run analyzed as it went (streaming.h): `call` lines are the calls
//                                  whose judgements were kept, `carried*` lines the rest; not judged again
//   finding <fields...>            after `analyzed`: one judgement (kFindingShape in recording.cpp)
//   end                            written last: a recording without it is incomplete
// Text fields are percent-encoded (space, %, control characters), so every field is one token.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/events.h"

namespace asynccheck {

inline constexpr int kRecordingVersion = 1;

void write_recording(std::ostream& out, const EventLog& log);

// A recording written as the run goes (report/recording_stream.h), in pieces that read back like write_recording's:
// the head (the run as known at its start, with its arguments, and the API names); events, after the stacks and NVTX names they refer to
// (write_stacks and write_nvtx_ranges from the first not written yet, ids first + 1 on); then the tail: the run,
// modules, the stacks and NVTX names not written yet, symbols, what was counted but not kept, marks, `end`. The
// tail's run line replaces the head's (a recording cut short still says with which settings it was made). After a
// chunk's events, append_step: the marks from `first` on, then the step the analysis took (its `step` line).
// read_recording puts the events in log order.
void write_recording_head(std::ostream& out, const RunInfo& run, const std::vector<std::string>& api_names);
void write_stacks(std::ostream& out, const std::vector<Stack>& stacks, size_t first);
void write_nvtx_ranges(std::ostream& out, const std::vector<NvtxRange>& ranges, size_t first);
void write_events(std::ostream& out, const CallVector& calls, const OpVector& ops);
void write_recording_tail(std::ostream& out, const EventLog& log, size_t stacks_written, size_t nvtx_written,
                          size_t marks_written = 0);
// The same lines appended to a string of the caller's, which the writers above write: what a live run writes for
// every chunk of its events, on the recording's thread, without std::ostream's cost per field. `ids_from`: the table
// given is the whole one's from that index on (a live run asks only for the entries not written yet).
void append_stacks(std::string& out, const std::vector<Stack>& stacks, size_t first, size_t ids_from = 0);
void append_nvtx_ranges(std::string& out, const std::vector<NvtxRange>& ranges, size_t first, size_t ids_from = 0);
void append_events(std::string& out, const CallVector& calls, const OpVector& ops);
void append_step(std::string& out, const std::vector<Mark>& marks, size_t first, uint64_t horizon_ns,
                 uint64_t margin_ns);

class Replay;

// Whether the calls on each thread nest (one holds the other or they do not overlap), as captured calls do; if not,
// `error` names two that overlap. Any order.
bool calls_nest(std::vector<const ApiCall*> calls, std::string& error);

// Reads a recording. On failure returns false and sets `error` to "line N: <what is wrong> (<what is valid>)".
// With `replay`, a recording with `step` lines is analyzed as it is read, in those steps, and `log` is its analysis
// (analyzed, as a run that was analyzed as it went: analysis/replay.h); without, or without steps, `log` holds
// every event.
bool read_recording(std::istream& in, EventLog& log, std::string& error, Replay* replay = nullptr);

std::string percent_encode(std::string_view text);
void append_percent_encoded(std::string& out, std::string_view text);  // percent_encode(text), appended to `out`
bool percent_decode(std::string_view text, std::string& out);

// Whether `log` (a process's, capture::finish's or its hand-off) holds any sign of CUDA use: a watched call (kept,
// compacted or shed), GPU work, a context created, or it is incomplete (a call in flight, a lock not taken in time:
// what happened is unknown).
bool used_cuda(const EventLog& log);

// Which of its program's processes the asynccheck command writes reports for (interpose/lineage.h says which hand a
// run over), one answer per log: a process that made no CUDA call, where monitoring was on, is the program the user
// asked about only when no process has a report of its own to make (a shell running the program, compute-sanitizer's
// launcher: its report of nothing would take the path the program's report needs). A process that used CUDA, or
// where monitoring was off or stopped (why is what the user needs), is always reported.
std::vector<bool> command_reports(const std::vector<EventLog>& logs);

}  // namespace asynccheck
