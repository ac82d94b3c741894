// The compact event stream that the in-process capture produces and the analysis consumes. The same structs
// are written to and read from recordings (recording.h), so a replay sees exactly what a live run saw.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "analysis/capture_range.h"
#include "analysis/event_memory.h"
#include "analysis/kernel_name.h"
#include "rules/api_traits.h"
#include "rules/call.h"
#include "rules/catalog.h"
#include "analysis/finding.h"

namespace asynccheck {

enum class Domain : uint8_t { Runtime, Driver };

// Stream handles and creation flags with a meaning of their own, as ApiCall records them (the runtime and the
// driver API define the same values).
using rules::kStreamLegacyHandle;                        // cudaStreamLegacy == CU_STREAM_LEGACY
using rules::kStreamPerThreadHandle;                     // cudaStreamPerThread == CU_STREAM_PER_THREAD
inline constexpr uint32_t kStreamNonBlockingFlag = 0x1;  // cudaStreamNonBlocking == CU_STREAM_NON_BLOCKING

// One watched API call, as seen by the CUPTI callbacks on the calling thread.
struct ApiCall {
  uint64_t correlation_id = 0;         // CUPTI correlation id; activity records of the work it enqueued carry it too
  uint64_t driver_correlation_id = 0;  // runtime calls: the nested driver call's id (records may carry that one)
  uint64_t start_ns = 0;               // CUPTI timebase (cuptiGetTimestamp), at API entry
  uint64_t end_ns = 0;                 // at API exit
  uint32_t thread = 0;                 // dense thread number, in order of first watched call (0 = main thread first)
  uint32_t cbid = 0;                   // CUPTI callback id within the domain
  uint16_t name = 0;                   // index into EventLog::api_names ("cudaMemcpyAsync")
  Domain domain = Domain::Runtime;
  // Kept by the compaction of earlier versions only as context for other calls (recordings they made still read):
  // described, not judged; what it contributed to the report is already in EventLog::carried.
  bool context_only = false;
  rules::CallDescription call;  // what the rule engine needs (stream kind etc. are completed by the analysis)
  uint64_t stream = 0;          // stream handle as passed (0 = default stream)
  uint64_t src_ptr = 0;         // copies: source address (host or device)
  uint64_t dst_ptr = 0;         // copies/memsets: destination address
  uint64_t function = 0;        // launches: the kernel's host function / CUfunction
  uint64_t handle = 0;          // the stream/event/pointer a call creates or consumes (see ApiKind)
  uint32_t flags = 0;           // creation flags (stream, event, host alloc); a batch copy's number of copies; or 0
  uint32_t stack = 0;           // interned call stack (stacks.h), 0 = not captured
  int32_t result = 0;           // the call's return code (0 = success)
  // The innermost NVTX push/pop range open on the calling thread during the call (interpose/nvtx_ranges.h):
  // N is EventLog::nvtx_ranges[N - 1], 0 = none (no range open, or NVTX ranges were off).
  uint32_t nvtx_range = 0;
};
// Every call the capture holds is one of these (the threads' buffers, the backlog, the analysis' window: ~100k of
// them in an 8-thread flood): the flags fill the padding after `domain` rather than add a word at the end.
static_assert(sizeof(ApiCall) <= 136, "ApiCall grew: every buffered call pays for it");

// Every vector of calls and of GPU work, from the program's threads' buffers to the analysis' window, keeps its
// elements in the event memory (event_memory.h): one cache of large blocks for every thread, instead of malloc's
// arenas, each keeping the holes of the vectors another thread freed.
using CallVector = std::vector<ApiCall, EventAllocator<ApiCall>>;

// Migration: a unified-memory transfer (managed memory paged in or out: CUPTI's unified-memory counters), enqueued
// by no call; copy_kind says its direction (1 host to device, 2 device to host), bytes how much moved.
enum class GpuOpKind : uint8_t { Memcpy, Memset, Kernel, Sync, Migration };

// The stream id migrations are given: CUPTI's stream id is not meaningful for every unified-memory counter, and a
// migration is no stream's work (it must not be the op before a kernel in a stream's order).
inline constexpr uint32_t kMigrationStream = 0xFFFFFFFE;

// One piece of GPU work (or a GPU-side wait) from a CUPTI activity record.
struct GpuOp {
  GpuOpKind kind = GpuOpKind::Kernel;
  uint8_t copy_kind = 0;  // CUpti_ActivityMemcpyKind
  uint8_t src_kind = 0;   // CUpti_ActivityMemoryKind as reported by the driver (the truth about pinning)
  uint8_t dst_kind = 0;
  uint8_t sync_type = 0;   // CUpti_ActivitySynchronizationType for Sync ops
  uint32_t stream_id = 0;  // CUPTI stream id (not the handle); all ops of one stream share it
  uint64_t correlation_id = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t bytes = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  KernelName name;  // kernel name (mangled), empty for others
};
// As ApiCall: the backlog and the window hold a flood's operations by the hundred thousand, copied at every merge.
static_assert(sizeof(GpuOp) <= 64 && std::is_trivially_copyable_v<GpuOp>, "GpuOp grew: every buffered op pays for it");
using OpVector = std::vector<GpuOp, EventAllocator<GpuOp>>;  // as CallVector

// The order of a log's calls: by start, then by correlation id (CUPTI numbers calls as they are made). Calls of two
// threads may start in the same nanosecond; which comes first decides, e.g., which launch of a function is its
// first. Gathered per thread or in rounds of compaction, the log must read the same.
inline bool before_in_log(const ApiCall& a, const ApiCall& b) {
  return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.correlation_id < b.correlation_id;
}

// The order of a log's GPU operations: by start, then end, stream, correlation id and kind. Work of two streams may
// start or end in the same nanosecond, and the analysis names the first it meets as evidence; CUPTI delivers the
// records in an order of its own, which compaction in rounds changes.
inline bool before_in_log(const GpuOp& a, const GpuOp& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.end_ns != b.end_ns) return a.end_ns < b.end_ns;
  if (a.stream_id != b.stream_id) return a.stream_id < b.stream_id;
  if (a.correlation_id != b.correlation_id) return a.correlation_id < b.correlation_id;
  return a.kind < b.kind;
}

// before_in_log as a comparator, for the sorts, merges and searches that keep calls or GPU work in log order.
struct InLogOrder {
  bool operator()(const ApiCall& a, const ApiCall& b) const { return before_in_log(a, b); }
  bool operator()(const GpuOp& a, const GpuOp& b) const { return before_in_log(a, b); }
};

// Something that happened in the process that explains host time without being an API call of ours.
enum class MarkKind : uint8_t { ContextCreated, ModuleLoaded, ContextDestroyed };
struct Mark {
  MarkKind kind = MarkKind::ContextCreated;
  uint64_t time_ns = 0;
  uint32_t thread = 0;
};

// A loaded module (for symbolizing stacks after the process is gone).
struct Module {
  uint64_t base = 0;  // lowest mapped address
  uint64_t end = 0;   // one past the highest
  uint64_t bias = 0;  // load bias: ip - bias is the address in the file (0 for a non-PIE executable)
  std::string path;
};

// A Python frame of the calling thread, read from the interpreter, with the thread's GIL held or released
// (interpose/python_frames.h): the source file as the interpreter names it, the code object's name, the line.
struct PyFrame {
  std::string file;
  std::string function;  // co_name: "step", "<module>", "<listcomp>"
  int line = 0;          // 0 when the interpreter did not know it
  bool operator==(const PyFrame&) const = default;
};

// One interned call stack: return addresses, innermost first, and for a Python program the Python frames that
// made the call, innermost first (part of the stack's identity: two Python lines calling the same native code
// are two stacks, hence two call sites).
struct Stack {
  std::vector<uint64_t> frames;
  std::vector<PyFrame> python;
};

// A resolved frame of a return address (one address can have several: inlined functions, innermost first).
struct Symbol {
  uint64_t ip = 0;
  std::string function;
  std::string file;
  int line = 0;
};

struct RunInfo {
  std::string program;
  std::vector<std::string> args;
  int pid = 0;
  int64_t rank = -1;              // rank in an MPI or Slurm job (options.h: kRankVariables); -1 outside one
  std::string rank_variable;      // the environment variable the rank came from ("OMPI_COMM_WORLD_RANK")
  std::string gpu;                // device name
  std::string driver;             // driver version, e.g. "13000"
  std::string cuda_runtime;       // runtime version the program uses, if known
  std::string monitoring = "on";  // "on", or "off: <reason>" when we failed open
  uint64_t dropped_records = 0;   // activity records CUPTI dropped
  // Calls counted but not analyzed: the analysis fell behind the program and its backlog reached the
  // compact_backlog option, so ordinary calls (no stack captured: fast, no rule predicts they block) were shed
  // (analysis/feed.h). They cannot be findings themselves; other calls' evidence may lack them.
  uint64_t unanalyzed_calls = 0;
  uint64_t threshold_ns = 0;               // the waited-time threshold in effect (AnalysisOptions::threshold_ns)
  uint64_t cost_threshold_ns = 1'000'000;  // the own-cost threshold in effect (AnalysisOptions::cost_threshold_ns)
  // The capture_range option in effect: "" (every call is judged), "cudaProfilerApi" or "nvtx:NAME[@DOMAIN]"
  // (analysis/capture_range.h).
  std::string capture_range;
  rules::Environment env;
  bool complete = true;  // false when the run ended before we could flush everything
  // How the program ended: "exit" (returned from main or called exit), "signal SIGTERM" (any fatal signal),
  // "_exit", "_Exit" or "quick_exit". Anything but "exit" leaves the report incomplete (docs/robustness.md).
  std::string end = "exit";
  // With a fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL raised by an instruction), where: "at MODULE+0xOFFSET, address
  // 0xADDRESS" (the instruction's module and its offset in that file; the address the fault was about), or "at
  // 0xPC, ..." outside any module. "" otherwise. Whether the program's own code, a library's or CUPTI's faulted
  // (docs/robustness.md).
  std::string fault;
};

// An NVTX push/pop range as the program named it: the message it pushed, in the domain it pushed it in, and the
// range it was nested in (on its thread, or a region of the whole process: interpose/nvtx_ranges.h).
struct NvtxRange {
  std::string domain;   // "" = NVTX's default domain (nvtxRangePushA/W/Ex)
  std::string name;     // the message (ASCII, UTF-8 from wide strings, or the registered string's text)
  uint32_t parent = 0;  // EventLog::nvtx_ranges id of the enclosing range, always a smaller one; 0 = outermost
  bool operator==(const NvtxRange&) const = default;
};

// Findings folded away (streaming.h): one (stack, API, rule, NVTX range) key, what its findings not kept as calls
// add to the site's row. The key's first findings, StreamingOptions::samples_per_site of them, stay as calls.
struct CarriedSite {
  uint32_t stack = 0;
  uint16_t name = 0;  // ApiCall::name
  rules::RuleId rule = rules::RuleId::UndocumentedBlock;
  uint64_t count = 0;
  uint64_t total_ns = 0;  // held_ns (GPU-side rules: gpu_delay_ns), summed
  uint64_t max_ns = 0;
  uint64_t bytes = 0;
  uint32_t nvtx_range = 0;  // ApiCall::nvtx_range: part of the key, so that the per-range counts stay exact
  uint64_t waited_ns = 0;   // Finding::waited_ns, summed
  uint64_t own_ns = 0;      // Finding::own_ns, summed
  uint64_t below = 0;       // findings below the threshold (Finding::below_threshold), of `count`
  std::map<uint16_t, uint64_t> median_sketch;  // the times summed in total_ns, in median_sketch.h's buckets
};

// What a run analyzed as it went (streaming.h) let go of, so that its report is that of the whole run. All zero for
// a log that kept every event (the capture with a trace, or compact=0).
struct Carried {
  uint64_t calls = 0;                              // calls dropped (counted in calls_watched)
  uint64_t ops = 0;                                // GPU operations dropped (counted in the report's gpu_operations)
  std::map<rules::RuleId, uint64_t> not_observed;  // contributions of calls no longer judged (dropped or context_only)
  uint64_t context_creation_ns = 0;
  uint64_t kind_disagreements = 0;
  uint64_t captured_calls = 0;        // dropped calls that stream capture had recorded into a graph
  uint64_t outside_range_calls = 0;   // dropped calls made outside the capture range
  std::vector<CarriedSite> findings;  // one per key
  bool empty() const {
    return calls == 0 && ops == 0 && not_observed.empty() && context_creation_ns == 0 && kind_disagreements == 0 &&
           captured_calls == 0 && outside_range_calls == 0 && findings.empty();
  }
};

// Everything one run produced: what a recording holds and what the analysis reads.
struct EventLog {
  RunInfo run;
  std::vector<std::string> api_names;  // ApiCall::name indexes this
  CallVector calls;                    // in order of API entry
  OpVector ops;
  std::vector<Mark> marks;
  std::vector<Module> modules;
  std::vector<Stack> stacks;           // stack id N is stacks[N - 1]
  std::vector<Symbol> symbols;         // resolved frames, so a recording replays with its call sites anywhere
  std::vector<NvtxRange> nvtx_ranges;  // ApiCall::nvtx_range N is nvtx_ranges[N - 1]
  Carried carried;                     // what was folded away: counts and sites of the findings not kept as calls
  // A run analyzed as it went (streaming.h): `calls` are the calls whose findings were kept (each site's first ones),
  // `findings` those judgements (indices into calls and ops), `carried` the rest. Such a log is not judged again:
  // analyze() reads its findings; it reports only at the thresholds it was analyzed with.
  bool analyzed = false;
  std::vector<Finding> findings;
};

// `from`'s run, the tables its events refer to (API names, stacks, symbols, modules, NVTX names) and its marks, into
// `to`: what a streamed result leaves to its caller (streaming.h: StreamingAnalysis::Result), and what a recording
// written as the run went ends with.
inline void copy_run_and_tables(const EventLog& from, EventLog& to) {
  to.run = from.run;
  to.api_names = from.api_names;
  to.stacks = from.stacks;
  to.symbols = from.symbols;
  to.modules = from.modules;
  to.nvtx_ranges = from.nvtx_ranges;
  to.marks = from.marks;
}

}  // namespace asynccheck
