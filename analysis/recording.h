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
//   nvtx <id> <domain> <name>      optional: an NVTX range that `call` lines name, ids 1, 2, ... in order
//   call <fields...>               one per watched API call (see kCallShape in recording.cpp); an optional last
//                                  field names the call's innermost NVTX range (absent: none)
//   ctxcall <fields...>            optional: a call that earlier versions' compaction kept as context only
//   carried <calls> <ops> <context_creation_ns> <kind_disagreements> <captured_calls>   optional, compacted log
//   carried_not_observed <rule> <count>                                (analysis/streaming.h): what the analysis
//   carried_site <stack> <name> <rule> <count> <total_ns> <max_ns> <bytes> [<nvtx>]   folded away; see events.h
//                                  Carried (the optional last field: the site's NVTX range, as on `call`)
//   op <fields...>                 one per GPU operation from the activity records
//   mark <kind> <time> <thread>    context creation, module loads
//   analyzed                       optional: a run analyzed as it went (streaming.h): `call` lines are the calls
//                                  whose judgements were kept, `carried*` lines the rest; not judged again
//   finding <fields...>            after `analyzed`: one judgement (kFindingShape in recording.cpp)
//   end                            written last: a recording without it is incomplete
// Text fields are percent-encoded (space, %, control characters), so every field is one token.
#pragma once

#include <iosfwd>
#include <string>

#include "analysis/events.h"

namespace asynccheck {

inline constexpr int kRecordingVersion = 1;

void write_recording(std::ostream& out, const EventLog& log);

// Reads a recording. On failure returns false and sets `error` to "line N: <what is wrong> (<what is valid>)".
bool read_recording(std::istream& in, EventLog& log, std::string& error);

std::string percent_encode(std::string_view text);
bool percent_decode(std::string_view text, std::string& out);

}  // namespace asynccheck
