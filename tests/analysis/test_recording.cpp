#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/names.h"
#include "analysis/recording.h"

namespace asynccheck {
namespace {

EventLog sample_log() {
  EventLog log;
  log.run.program = "/tmp/my app";
  log.run.args = {"pageable", "", "a b"};
  log.run.pid = 42;
  log.run.gpu = "NVIDIA H100 80GB HBM3";
  log.run.threshold_ns = 100000;
  log.run.env.module_loading = rules::ModuleLoading::Eager;
  log.api_names = {"cudaMemcpyAsync", "cudaLaunchKernel"};
  log.modules = {{0x400000, 0x500000, 0, "/tmp/my app"}};
  log.stacks = {Stack{{0x401000, 0x402000}, {}}};
  log.symbols = {{0x401000, "cudaMalloc<char>(char**, unsigned long)", "/usr/local/cuda/include/cuda_runtime.h", 879},
                 {0x401000, "main", "/src/my app.cu", 12}};
  ApiCall c;
  c.correlation_id = 7;
  c.driver_correlation_id = 8;
  c.start_ns = 1000;
  c.end_ns = 5000;
  c.name = 0;
  c.call.api = rules::ApiKind::Copy;
  c.call.async_form = true;
  c.call.direction = rules::CopyDirection::DeviceToHost;
  c.call.bytes = 1 << 20;
  c.call.src = rules::MemoryKind::Device;
  c.call.dst = rules::MemoryKind::Pageable;
  c.stream = 0xdeadbeef;
  c.stack = 1;
  log.calls.push_back(c);
  GpuOp op;
  op.kind = GpuOpKind::Kernel;
  op.correlation_id = 9;
  op.start_ns = 100;
  op.end_ns = 4000;
  op.name = "_Z5dummyx";
  log.ops.push_back(op);
  log.marks.push_back({MarkKind::ModuleLoaded, 50, 0});
  return log;
}

TEST(Recording, RoundTripsEveryField) {
  const EventLog log = sample_log();
  std::stringstream s;
  write_recording(s, log);
  EventLog back;
  std::string error;
  ASSERT_TRUE(read_recording(s, back, error)) << error;
  EXPECT_EQ(back.run.program, log.run.program);
  EXPECT_EQ(back.run.args, log.run.args);
  EXPECT_EQ(back.run.env.module_loading, rules::ModuleLoading::Eager);
  EXPECT_TRUE(back.run.complete);
  ASSERT_EQ(back.calls.size(), 1u);
  EXPECT_EQ(back.calls[0].driver_correlation_id, 8u);
  EXPECT_EQ(back.calls[0].call.dst, rules::MemoryKind::Pageable);
  EXPECT_EQ(back.calls[0].stream, 0xdeadbeefu);
  ASSERT_EQ(back.ops.size(), 1u);
  EXPECT_EQ(back.ops[0].name, "_Z5dummyx");
  EXPECT_EQ(back.stacks[0].frames, log.stacks[0].frames);
  EXPECT_EQ(back.modules[0].path, "/tmp/my app");
  ASSERT_EQ(back.symbols.size(), 2u);
  EXPECT_EQ(back.symbols[1].file, "/src/my app.cu");
  EXPECT_EQ(back.symbols[1].line, 12);
  std::stringstream again;
  write_recording(again, back);
  std::stringstream first;
  write_recording(first, log);
  EXPECT_EQ(again.str(), first.str());
}

// The capture calls (new in the format's version 1, additive) round-trip with their stream, mode and graph.
// What no capture writes is refused, naming what is wrong: a call line given twice (it read as many calls), two
// calls at once on one thread, and a recording that does not say which run it is (it read as "monitoring on,
// complete") (issue 22).
TEST(Recording, RefusesWhatNoCaptureWrites) {
  EventLog log = sample_log();
  std::stringstream s;
  write_recording(s, log);
  std::string text = s.str();
  const size_t call = text.find("\ncall ") + 1;
  const std::string line = text.substr(call, text.find('\n', call) + 1 - call);
  std::stringstream twice(text.substr(0, call) + line + text.substr(call));
  EventLog back;
  std::string error;
  EXPECT_FALSE(read_recording(twice, back, error));
  EXPECT_NE(error.find("is given twice (a capture writes each call once)"), std::string::npos) << error;
  // Two calls on one thread that overlap without nesting: the line again under an id of its own, 3000-6000.
  ASSERT_EQ(line.rfind("call 7 8 1000 5000 ", 0), 0u) << line;
  std::stringstream overlapping(text.substr(0, call) + "call 9 0 3000 6000 " + line.substr(19) + text.substr(call));
  EXPECT_FALSE(read_recording(overlapping, back, error));
  EXPECT_EQ(error,
            "calls 7 and 9 overlap on thread 0 (1000-5000 and 3000-6000) without one holding the other: calls on one "
            "thread nest");
  // One inside the other, as a watched call made inside another is recorded: read.
  std::stringstream nested(text.substr(0, call) + "call 9 0 2000 3000 " + line.substr(19) + text.substr(call));
  EXPECT_TRUE(read_recording(nested, back, error)) << error;
  EXPECT_EQ(back.calls.size(), 2u);
  std::stringstream no_run("asynccheck-recording 1\nend\n");
  EXPECT_FALSE(read_recording(no_run, back, error));
  EXPECT_EQ(error, "line 2: the recording has no 'run' line (every recording states its run: run program=... pid=...)");
}

// A run analyzed with a capture range (issue 21): the range in the run line, the calls outside it in `carried` (a
// sixth field, written only then, so that older recordings stay as they were).
TEST(Recording, CaptureRangeRoundTrips) {
  EventLog log = sample_log();
  std::stringstream plain;
  write_recording(plain, log);
  EXPECT_EQ(plain.str().find("capture_range"), std::string::npos);
  log.run.capture_range = "cudaProfilerApi";
  log.carried.calls = 5;
  log.carried.outside_range_calls = 3;
  std::stringstream s;
  write_recording(s, log);
  EXPECT_NE(s.str().find(" capture_range=cudaProfilerApi"), std::string::npos);
  EXPECT_NE(s.str().find("\ncarried 5 0 0 0 0 3\n"), std::string::npos) << s.str();
  EventLog back;
  std::string error;
  ASSERT_TRUE(read_recording(s, back, error)) << error;
  EXPECT_EQ(back.run.capture_range, "cudaProfilerApi");
  EXPECT_EQ(back.carried.outside_range_calls, 3u);
}

TEST(Recording, CaptureCallsRoundTrip) {
  EventLog log = sample_log();
  ApiCall begin = log.calls[0];
  begin.call = {};
  begin.call.api = rules::ApiKind::CaptureBegin;
  begin.flags = 2;  // relaxed
  begin.handle = 0;
  ApiCall end = begin;
  end.call.api = rules::ApiKind::CaptureEnd;
  end.flags = 0;
  end.handle = 0x9a0;
  begin.correlation_id = 100;  // calls of their own (a capture writes each call once), on threads of their own
  end.correlation_id = 101;    // (calls on one thread nest)
  begin.thread = 1;
  end.thread = 2;
  log.calls.push_back(begin);
  log.calls.push_back(end);
  std::stringstream s;
  write_recording(s, log);
  EXPECT_NE(s.str().find(" capture-begin "), std::string::npos);
  EXPECT_NE(s.str().find(" capture-end "), std::string::npos);
  EventLog back;
  std::string error;
  ASSERT_TRUE(read_recording(s, back, error)) << error;
  ASSERT_EQ(back.calls.size(), 3u);
  EXPECT_EQ(back.calls[1].call.api, rules::ApiKind::CaptureBegin);
  EXPECT_EQ(back.calls[1].flags, 2u);
  EXPECT_EQ(back.calls[1].stream, 0xdeadbeefu);
  EXPECT_EQ(back.calls[2].call.api, rules::ApiKind::CaptureEnd);
  EXPECT_EQ(back.calls[2].handle, 0x9a0u);
}

TEST(Recording, TruncatedRecordingIsMarkedIncomplete) {
  std::stringstream s;
  write_recording(s, sample_log());
  std::string text = s.str();
  text = text.substr(0, text.rfind("end\n"));
  std::stringstream in(text);
  EventLog back;
  std::string error;
  ASSERT_TRUE(read_recording(in, back, error)) << error;
  EXPECT_FALSE(back.run.complete);
}

// How the run ended is an optional key of the run line: written only for abnormal ends, so that the recording of
// an ordinary run reads in versions that predate it, and a recording without it reads as an ordinary exit.
TEST(Recording, HowTheRunEndedRoundTripsAndIsOptional) {
  EventLog log = sample_log();
  std::stringstream plain;
  write_recording(plain, log);
  EXPECT_EQ(plain.str().find(" end="), std::string::npos) << plain.str();
  log.run.end = "signal SIGTERM";
  log.run.complete = false;
  std::stringstream s;
  write_recording(s, log);
  EXPECT_NE(s.str().find(" complete=0 end=signal%20SIGTERM\n"), std::string::npos) << s.str();
  EventLog back;
  std::string error;
  ASSERT_TRUE(read_recording(s, back, error)) << error;
  EXPECT_EQ(back.run.end, "signal SIGTERM");
  EXPECT_FALSE(back.run.complete);
  EXPECT_EQ(s.str().find(" fault="), std::string::npos) << "only after a fault";
  // A fault's place, percent-encoded like every text.
  log.run.end = "signal SIGSEGV";
  log.run.fault = "at libcupti.so.13+0x838b0, address 0x0";
  std::stringstream faulted;
  write_recording(faulted, log);
  EXPECT_NE(faulted.str().find(" fault=at%20libcupti.so.13+0x838b0,%20address%200x0"), std::string::npos)
      << faulted.str();
  EventLog faulted_back;
  ASSERT_TRUE(read_recording(faulted, faulted_back, error)) << error;
  EXPECT_EQ(faulted_back.run.fault, log.run.fault);
  // A recording written before the key existed (no 'end='): an ordinary exit.
  std::stringstream old("asynccheck-recording 1\nrun program=%2Ftmp%2Fa pid=42 complete=1\nend\n");
  EventLog before;
  ASSERT_TRUE(read_recording(old, before, error)) << error;
  EXPECT_EQ(before.run.end, "exit");
  EXPECT_TRUE(before.run.complete);
}

// Python frames of a stack: optional 'pyframe' lines after their stack, innermost first, with every text field
// percent-encoded (paths with spaces, "<module>"). A stack of Python frames alone (no native frames) is valid.
TEST(Recording, PythonFramesRoundTripAndAreOptional) {
  EventLog log = sample_log();
  std::stringstream plain;
  write_recording(plain, log);
  EXPECT_EQ(plain.str().find("pyframe"), std::string::npos) << plain.str();  // native programs: as before
  log.stacks[0].python = {{"/home/me/my project/train.py", "step", 12},
                          {"/home/me/my project/train.py", "<module>", 40}};
  log.stacks.push_back(Stack{{}, {{"/opt/venv/lib/python3.12/site-packages/torch/_tensor.py", "to", 0}}});
  std::stringstream s;
  write_recording(s, log);
  EXPECT_NE(s.str().find("stack 1 401000 402000\npyframe 1 /home/me/my%20project/train.py step 12\n"
                         "pyframe 1 /home/me/my%20project/train.py <module> 40\nstack 2\npyframe 2 "),
            std::string::npos)
      << s.str();
  EventLog back;
  std::string error;
  ASSERT_TRUE(read_recording(s, back, error)) << error;
  ASSERT_EQ(back.stacks.size(), 2u);
  EXPECT_EQ(back.stacks[0].frames, log.stacks[0].frames);
  EXPECT_EQ(back.stacks[0].python, log.stacks[0].python);
  EXPECT_TRUE(back.stacks[1].frames.empty());
  EXPECT_EQ(back.stacks[1].python, log.stacks[1].python);
  std::stringstream again;
  write_recording(again, back);
  EXPECT_EQ(again.str(), s.str());
}

struct BadCase {
  const char* name;
  std::string text;
  std::string message;
};

TEST(Recording, BadInputGetsPreciseErrors) {
  const std::string head = "asynccheck-recording 1\n";
  const std::vector<BadCase> cases = {
      {"empty", "", "empty file: not an asynccheck recording"},
      {"magic", "hello\n", "line 1: not an asynccheck recording (expected first line 'asynccheck-recording 1')"},
      {"version", "asynccheck-recording 9\n",
       "line 1: recording version '9' is not supported (this asynccheck reads version 1)"},
      {"tag", head + "bogus 1\n",
       "line 2: unknown record 'bogus' (valid: run, arg, api, module, stack, pyframe, sym, nvtx, call, ctxcall, op, "
       "mark, step, carried, carried_not_observed, carried_site, analyzed, finding, end)"},
      {"step fields", head + "step 12\n", "line 2: expected 2 fields after 'step', got 1 (step horizon_ns margin_ns)"},
      {"step after analyzed", head + "analyzed\nstep 12 3\n",
       "line 3: a 'step' after the 'analyzed' line (a recording of judgements takes none)"},
      {"op fields", head + "op kernel 1 2\n",
       "line 2: expected 13 fields after 'op', got 3 (op kind corr start end device context stream bytes copy_kind "
       "src_kind dst_kind sync_type name)"},
      {"op kind", head + "op warp 1 2 3 0 0 0 0 0 0 0 0 -\n",
       "line 2: field 'kind': 'warp' is not one of: memcpy, memset, kernel, sync, migration"},
      {"op order", head + "op kernel 1 5 3 0 0 0 0 0 0 0 0 -\n", "line 2: op ends before it starts"},
      {"number", head + "mark module-loaded x 0\n", "line 2: field 'time': 'x' is not a decimal integer in range"},
      {"api order", head + "api 3 cudaFree\n", "line 2: api index 3 out of order (expected 0)"},
      {"run key", head + "run color=blue\n",
       "line 2: run: unknown key 'color' (valid: program, pid, gpu, driver, runtime, monitoring, dropped, unanalyzed, "
       "threshold_ns, cost_threshold_ns, capture_range, module_loading, launch_blocking, complete, end, fault, rank, "
       "rank_from)"},
      {"after end", head + "end\nmark module-loaded 1 0\n", "line 3: content after 'end'"},
      {"percent", head + "arg %4\n", "line 2: field 'text': bad percent-encoding in '%4'"},
      {"percent sign", head + "arg %-1\n", "line 2: field 'text': bad percent-encoding in '%-1'"},  // fuzzing
      {"pyframe fields", head + "stack 1 10\npyframe 1 a.py f\n",
       "line 3: expected 4 fields after 'pyframe', got 3 (pyframe stack file function line)"},
      {"pyframe stack", head + "stack 1 10\npyframe 2 a.py f 3\n",
       "line 3: pyframe of stack 2, which was not declared"},
      {"pyframe stack 0", head + "pyframe 0 a.py f 3\n", "line 2: pyframe of stack 0, which was not declared"},
      {"pyframe line", head + "stack 1 10\npyframe 1 a.py f -4\n", "line 3: field 'line': -4 is negative"},
      {"pyframe number", head + "stack 1 10\npyframe 1 a.py f x\n",
       "line 3: field 'line': 'x' is not a decimal integer in range"},
      {"pyframe text", head + "stack 1 10\npyframe 1 a%2 f 3\n", "line 3: field 'file': bad percent-encoding in 'a%2'"},
      {"carried fields", head + "carried 1 2 3 4\n",
       "line 2: expected 5 fields after 'carried', got 4 (carried calls ops context_creation_ns kind_disagreements "
       "captured_calls [outside_range_calls])"},
      {"carried rule", head + "carried_not_observed copy-everything 3\n",
       "line 2: field 'rule': 'copy-everything' is not a rule id (asynccheck --list-rules lists them)"},
      {"carried rule twice",
       head + "carried_not_observed undocumented-block 3\ncarried_not_observed undocumented-block 1\n",
       "line 3: rule 'undocumented-block' given twice"},
      {"carried site stack", head + "api 0 cudaMemcpy\ncarried_site 4 0 undocumented-block 1 10 10 0\n",
       "line 3: field 'stack': stack 4 was not declared"},
      {"carried site name", head + "carried_site 0 2 undocumented-block 1 10 10 0\n",
       "line 2: field 'name': api index 2 was not declared by an 'api' line"},
      {"carried site count", head + "api 0 cudaMemcpy\ncarried_site 0 0 undocumented-block 0 10 10 0\n",
       "line 3: field 'count': a carried site has at least one finding"},
  };
  for (const BadCase& c : cases) {
    std::stringstream in(c.text);
    EventLog log;
    std::string error;
    EXPECT_FALSE(read_recording(in, log, error)) << c.name;
    EXPECT_EQ(error, c.message) << c.name;
  }
}

TEST(Recording, CallReferringToUndeclaredNamesIsRejected) {
  std::stringstream in(
      "asynccheck-recording 1\ncall 1 0 10 20 0 runtime 5 0 copy 1 0 d2h 8 device pageable legacy 0 0 0 auto 0 0 0 0 0 "
      "0 0 0\n");
  EventLog log;
  std::string error;
  EXPECT_FALSE(read_recording(in, log, error));
  EXPECT_EQ(error, "line 2: field 'name': api index 0 was not declared by an 'api' line");
}

// NVTX ranges: a table of (domain, name) and an optional last field on `call` lines, written only when used.
TEST(Recording, NvtxRangesRoundTripAndStayOptional) {
  EventLog log = sample_log();
  std::stringstream plain;
  write_recording(plain, log);
  EXPECT_EQ(plain.str().find("nvtx"), std::string::npos) << plain.str();  // no ranges: the format as before
  const std::string old_call = plain.str().substr(plain.str().find("\ncall ") + 1);
  log.nvtx_ranges = {{"", "forward"}, {"my lib", "copy 100%"}, {"", "inner", 1}};
  log.calls.push_back(log.calls[0]);
  log.calls.back().correlation_id = 100;  // a call of its own (a capture writes each call once)
  log.calls[0].nvtx_range = 2;
  log.calls[0].thread = 1;  // at the same time: on another thread (calls on one thread nest)
  log.calls[1].nvtx_range = 0;
  log.calls.push_back(log.calls[0]);
  log.calls.back().correlation_id = 101;
  log.calls.back().thread = 2;
  log.calls[2].nvtx_range = 1;
  std::stringstream s;
  write_recording(s, log);
  // A nested range names its parent; the others are written as before parents existed.
  EXPECT_NE(s.str().find("nvtx 1 %00 forward\nnvtx 2 my%20lib copy%20100%25\nnvtx 3 %00 inner 1\n"), std::string::npos)
      << s.str();
  EventLog back;
  std::string error;
  ASSERT_TRUE(read_recording(s, back, error)) << error;
  EXPECT_EQ(back.nvtx_ranges, log.nvtx_ranges);
  ASSERT_EQ(back.calls.size(), 3u);
  EXPECT_EQ(back.calls[0].nvtx_range, 2u);
  EXPECT_EQ(back.calls[1].nvtx_range, 0u);
  EXPECT_EQ(back.calls[2].nvtx_range, 1u);
  std::stringstream again;
  write_recording(again, back);
  EXPECT_EQ(again.str(), s.str());
  // The call without a range is written exactly as a recording without ranges writes it (its own id aside).
  std::string line = old_call.substr(0, old_call.find('\n') + 1);
  ASSERT_EQ(line.rfind("call 7 ", 0), 0u) << line;
  line.replace(0, 7, "call 100 ");
  EXPECT_NE(s.str().find(line), std::string::npos);
}

TEST(Recording, BadNvtxLinesGetPreciseErrors) {
  const std::string head = "asynccheck-recording 1\napi 0 cudaFree\n";
  const std::string call =
      "call 1 0 10 20 0 runtime 5 0 copy 1 0 d2h 8 device pageable legacy 0 0 0 auto 0 0 0 0 0 0 0 0";
  const std::vector<BadCase> cases = {
      {"nvtx fields", head + "nvtx 1 forward\n",
       "line 3: expected 3 to 4 fields after 'nvtx', got 2 (nvtx id domain name [parent])"},
      {"nvtx order", head + "nvtx 2 %00 forward\n", "line 3: nvtx id 2 out of order (expected 1)"},
      {"nvtx parent after", head + "nvtx 1 %00 a\nnvtx 2 %00 b 2\n",
       "line 4: field 'parent': NVTX range 2 is not a range declared before 2 (valid: 1 to 1; none for an outermost "
       "range)"},
      {"nvtx parent zero", head + "nvtx 1 %00 a 0\n",
       "line 3: field 'parent': NVTX range 0 is not a range declared before 1 (valid: none: the first range is "
       "outermost)"},
      {"nvtx text", head + "nvtx 1 %00 for%2\n", "line 3: field 'name': bad percent-encoding in 'for%2'"},
      {"undeclared", head + "nvtx 1 %00 forward\n" + call + " 2\n",
       "line 4: field 'nvtx': NVTX range 2 was not declared by an 'nvtx' line (valid: 1 to 1, or no field for none)"},
      {"zero", head + "nvtx 1 %00 forward\n" + call + " 0\n",
       "line 4: field 'nvtx': NVTX range 0 was not declared by an 'nvtx' line (valid: 1 to 1, or no field for none)"},
      {"not a number", head + call + " x\n", "line 3: field 'nvtx': 'x' is not a decimal integer in range"},
      {"call fields", head + call + " 1 1\n",
       "line 3: expected 28 or 29 fields after 'call', got 30 (call corr driver_corr start end thread domain cbid name "
       "api "
       "async ptds dir bytes src dst stream_kind pending first stream_ordered wait stream src_ptr dst_ptr function "
       "handle "
       "flags stack result [nvtx])"},
      {"ctxcall fields", head + "ctxcall 1 0 10\n",
       "line 3: expected 28 or 29 fields after 'ctxcall', got 3 (call corr driver_corr start end thread domain cbid "
       "name "
       "api async ptds dir bytes src dst stream_kind pending first stream_ordered wait stream src_ptr dst_ptr function "
       "handle flags stack result [nvtx])"},
      {"carried site undeclared", head + "nvtx 1 %00 forward\ncarried_site 0 0 undocumented-block 1 10 10 0 2\n",
       "line 4: field 'nvtx': NVTX range 2 was not declared by an 'nvtx' line (valid: 1 to 1, or no field for none)"},
      {"carried site fields", head + "carried_site 0 0 undocumented-block 1 10 10 0 1 1\n",
       "line 3: expected 7, 8 or 12 fields after 'carried_site', got 9 (carried_site stack name rule count total_ns "
       "max_ns bytes [nvtx [waited_ns own_ns below sketch]])"},
  };
  for (const BadCase& c : cases) {
    std::stringstream in(c.text);
    EventLog log;
    std::string error;
    EXPECT_FALSE(read_recording(in, log, error)) << c.name;
    EXPECT_EQ(error, c.message) << c.name;
  }
}

TEST(Recording, PercentEncodingRoundTrips) {
  for (std::string s : {"plain", "with space", "100%", "tab\there", "new\nline", ""}) {
    std::string back;
    ASSERT_TRUE(percent_decode(percent_encode(s), back)) << s;
    EXPECT_EQ(back, s);
    EXPECT_EQ(percent_encode(s).find(' '), std::string::npos);
  }
}

// The writer as it was before it wrote into a string of its own (std::ostream, field by field): the reference the
// fast one (append_events and the ostream functions that call it) must match byte for byte, kept only here.
namespace reference {

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  if (text.empty()) return "%00";  // keeps the field a token; decodes to the empty string
  for (unsigned char ch : text) {
    if (ch <= ' ' || ch == '%' || ch == 0x7f) {
      out += '%';
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

void write_call(std::ostream& o, const ApiCall& c) {
  const rules::CallDescription& d = c.call;
  o << (c.context_only ? "ctxcall " : "call ") << c.correlation_id << ' ' << c.driver_correlation_id << ' '
    << c.start_ns << ' ' << c.end_ns << ' ' << c.thread << ' ' << name_of(c.domain) << ' ' << c.cbid << ' ' << c.name
    << ' ' << name_of(d.api) << ' ' << d.async_form << ' ' << d.per_thread_variant << ' ' << name_of(d.direction) << ' '
    << d.bytes << ' ' << name_of(d.src) << ' ' << name_of(d.dst) << ' ' << name_of(d.stream) << ' '
    << d.blocking_streams_pending << ' ' << d.first_launch << ' ' << d.stream_ordered_pointer << ' '
    << name_of(d.wait_mode) << std::hex << ' ' << c.stream << ' ' << c.src_ptr << ' ' << c.dst_ptr << ' ' << c.function
    << ' ' << c.handle << std::dec << ' ' << c.flags << ' ' << c.stack << ' ' << c.result;
  if (c.nvtx_range != 0) o << ' ' << c.nvtx_range;
  o << '\n';
}

void write_op(std::ostream& o, const GpuOp& op) {
  o << "op " << name_of(op.kind) << ' ' << op.correlation_id << ' ' << op.start_ns << ' ' << op.end_ns << ' '
    << op.device << ' ' << op.context << ' ' << op.stream_id << ' ' << op.bytes << ' ' << int(op.copy_kind) << ' '
    << int(op.src_kind) << ' ' << int(op.dst_kind) << ' ' << int(op.sync_type) << ' '
    << (op.name.empty() ? "-" : percent_encode(op.name.str())) << '\n';
}

void write_stacks(std::ostream& o, const std::vector<Stack>& stacks, size_t first) {
  for (size_t i = first; i < stacks.size(); ++i) {
    o << "stack " << (i + 1) << std::hex;
    for (uint64_t ip : stacks[i].frames) o << ' ' << ip;
    o << std::dec << '\n';
    for (const PyFrame& f : stacks[i].python) {
      o << "pyframe " << (i + 1) << ' ' << percent_encode(f.file) << ' ' << percent_encode(f.function) << ' ' << f.line
        << '\n';
    }
  }
}

void write_nvtx_ranges(std::ostream& o, const std::vector<NvtxRange>& ranges, size_t first) {
  for (size_t i = first; i < ranges.size(); ++i) {
    o << "nvtx " << (i + 1) << ' ' << percent_encode(ranges[i].domain) << ' ' << percent_encode(ranges[i].name);
    if (ranges[i].parent != 0) o << ' ' << ranges[i].parent;
    o << '\n';
  }
}

void write_events(std::ostream& o, const CallVector& calls, const OpVector& ops) {
  for (const ApiCall& c : calls) reference::write_call(o, c);
  for (const GpuOp& op : ops) reference::write_op(o, op);
}

// The tables and events of `log` as the reference writes them.
std::string text(const EventLog& log) {
  std::ostringstream o;
  reference::write_stacks(o, log.stacks, 0);
  reference::write_nvtx_ranges(o, log.nvtx_ranges, 0);
  reference::write_events(o, log.calls, log.ops);
  return o.str();
}

}  // namespace reference

// The same, by the fast writer: appended to a string, and through the ostream entry points.
std::string appended(const EventLog& log) {
  std::string s = "kept ";  // appends: what the string held stays
  append_stacks(s, log.stacks, 0);
  append_nvtx_ranges(s, log.nvtx_ranges, 0);
  append_events(s, log.calls, log.ops);
  return s.substr(5);
}
std::string streamed(const EventLog& log) {
  std::ostringstream o;
  write_stacks(o, log.stacks, 0);
  write_nvtx_ranges(o, log.nvtx_ranges, 0);
  write_events(o, log.calls, log.ops);
  return o.str();
}

// Every committed recording (tests/fixtures), read.
std::vector<std::pair<std::filesystem::path, EventLog>> committed_recordings() {
  namespace fs = std::filesystem;
  std::vector<std::pair<fs::path, EventLog>> out;
  for (const char* dir : {"tests/fixtures/recordings", "tests/fixtures/runs", "tests/fixtures/corpus"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(ASYNCCHECK_SOURCE_DIR) / dir)) {
      if (entry.path().extension() != ".rec") continue;
      std::ifstream in(entry.path());
      EventLog log;
      std::string error;
      EXPECT_TRUE(read_recording(in, log, error)) << entry.path() << ": " << error;
      out.emplace_back(entry.path(), std::move(log));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// Every committed recording's stacks, NVTX names and events are written byte for byte as the std::ostream writer
// wrote them, appended to a string or through the ostream functions (which write in blocks: the larger recordings
// span many).
TEST(Recording, FastWriterWritesCommittedRecordingsAsTheOstreamWriterDid) {
  const auto recordings = committed_recordings();
  ASSERT_GE(recordings.size(), 30u);
  size_t calls = 0, ops = 0;
  for (const auto& [path, log] : recordings) {
    const std::string want = reference::text(log);
    EXPECT_TRUE(appended(log) == want) << path;  // not EXPECT_EQ: megabytes of text in the message
    EXPECT_TRUE(streamed(log) == want) << path;
    calls += log.calls.size();
    ops += log.ops.size();
  }
  EXPECT_GT(calls, 10000u);
  EXPECT_GT(ops, 1000u);
}

// What the committed recordings may not hold: the largest values of each field, a negative result, a `ctxcall`, the
// optional NVTX field, an operation without a name, and names that need percent-encoding.
TEST(Recording, FastWriterWritesEdgeCasesAsTheOstreamWriterDid) {
  EventLog log;
  constexpr uint64_t kMax = UINT64_MAX;
  ApiCall big;
  big.correlation_id = big.driver_correlation_id = big.start_ns = big.end_ns = kMax;
  big.thread = big.cbid = big.flags = big.stack = big.nvtx_range = UINT32_MAX;
  big.name = UINT16_MAX;
  big.domain = Domain::Driver;
  big.call.api = rules::ApiKind::KernelLaunch;
  big.call.async_form = big.call.per_thread_variant = big.call.blocking_streams_pending = big.call.first_launch =
      big.call.stream_ordered_pointer = true;
  big.call.bytes = kMax;
  big.call.direction = rules::CopyDirection::HostToDevice;
  big.call.src = rules::MemoryKind::Pinned;
  big.call.dst = rules::MemoryKind::Managed;
  big.call.stream = rules::StreamKind::NonBlocking;
  big.call.wait_mode = rules::WaitMode::Spin;
  big.stream = big.src_ptr = big.dst_ptr = big.function = big.handle = kMax;
  big.result = INT32_MAX;
  log.calls.push_back(big);
  ApiCall context = big;
  context.context_only = true;
  context.result = INT32_MIN;
  context.nvtx_range = 0;
  log.calls.push_back(context);
  ApiCall zero;  // every field 0: no NVTX field
  log.calls.push_back(zero);
  ApiCall failed;
  failed.result = -1;
  failed.nvtx_range = 1;
  failed.stream = 0xABCDEF0123;
  failed.handle = 0x10;
  log.calls.push_back(failed);
  GpuOp op;
  op.kind = GpuOpKind::Memcpy;
  op.correlation_id = op.start_ns = op.end_ns = op.bytes = kMax;
  op.device = op.context = op.stream_id = UINT32_MAX;
  op.copy_kind = op.src_kind = op.dst_kind = op.sync_type = UINT8_MAX;
  log.ops.push_back(op);  // no name: "-"
  std::string every_byte;
  for (int b = 1; b < 256; ++b) every_byte += static_cast<char>(b);
  for (std::string name :
       {std::string("_Z6kernelPfi"), std::string("void k<float>(float*, int)"), std::string("100% done"),
        std::string("\xce\xbb_kernel \xe2\x86\x92 \xff"), std::string("tab\tnew\nline\x7f"), std::string("%"),
        std::string(" "), std::string("-"), std::string("a\0b", 3), every_byte}) {
    GpuOp named;
    named.kind = GpuOpKind::Kernel;
    named.name = name;
    named.copy_kind = 7;
    log.ops.push_back(named);
  }
  log.stacks = {Stack{{kMax, 0, 0x7f00deadbeef}, {}},
                Stack{{}, {{"/home/me/my project/train.py", "<module>", 40}, {"", "\xc3\xa9t\xc3\xa9 50%", -3}}}};
  log.nvtx_ranges = {{"", "forward"}, {"my lib", "copy 100%", 1}, {"\xe2\x9c\x93", "", UINT32_MAX}};

  const std::string want = reference::text(log);
  EXPECT_EQ(appended(log), want);
  EXPECT_EQ(streamed(log), want);
  // What the reference writes, spelled out for the largest values and the names.
  EXPECT_NE(want.find("call 18446744073709551615 18446744073709551615 18446744073709551615 18446744073709551615 "
                      "4294967295 driver 4294967295 65535 launch 1 1 h2d 18446744073709551615 "),
            std::string::npos)
      << want;
  EXPECT_NE(want.find(" ffffffffffffffff ffffffffffffffff ffffffffffffffff ffffffffffffffff ffffffffffffffff "
                      "4294967295 4294967295 2147483647 4294967295\nctxcall "),
            std::string::npos)
      << want;
  EXPECT_NE(want.find(" 4294967295 4294967295 -2147483648\ncall "), std::string::npos) << want;
  EXPECT_NE(want.find(" abcdef0123 0 0 0 10 0 0 -1 1\nop "), std::string::npos) << want;
  EXPECT_NE(want.find(" 255 255 255 255 -\n"), std::string::npos) << want;
  EXPECT_NE(want.find(" 7 0 0 0 void%20k<float>(float*,%20int)\n"), std::string::npos) << want;
  EXPECT_NE(want.find(" 7 0 0 0 100%25%20done\n"), std::string::npos) << want;
  EXPECT_NE(want.find(" 7 0 0 0 \xce\xbb_kernel%20\xe2\x86\x92%20\xff\n"), std::string::npos) << want;
  EXPECT_NE(want.find(" 7 0 0 0 tab%09new%0Aline%7F\n"), std::string::npos) << want;
  EXPECT_NE(want.find(" 7 0 0 0 a%00b\n"), std::string::npos) << want;
  EXPECT_NE(want.find("stack 1 ffffffffffffffff 0 7f00deadbeef\nstack 2\npyframe 2 /home/me/my%20project/train.py "
                      "<module> 40\npyframe 2 %00 \xc3\xa9t\xc3\xa9%2050%25 -3\n"),
            std::string::npos)
      << want;
  EXPECT_NE(want.find("nvtx 1 %00 forward\nnvtx 2 my%20lib copy%20100%25 1\nnvtx 3 \xe2\x9c\x93 %00 4294967295\n"),
            std::string::npos)
      << want;
  // From a later position of the tables, as a live run writes them chunk by chunk.
  std::ostringstream ref;
  reference::write_stacks(ref, log.stacks, 1);
  reference::write_nvtx_ranges(ref, log.nvtx_ranges, 2);
  std::string s;
  append_stacks(s, log.stacks, 1);
  append_nvtx_ranges(s, log.nvtx_ranges, 2);
  EXPECT_EQ(s, ref.str());
  for (const std::string& name : {std::string(), every_byte, std::string("\x80\x81 %")})
    EXPECT_EQ(percent_encode(name), reference::percent_encode(name));
  std::string into = "x";
  append_percent_encoded(into, every_byte);
  EXPECT_EQ(into, "x" + reference::percent_encode(every_byte));
}

}  // namespace
TEST(Recording, AnySignOfCudaCounts) {
  EventLog none;
  none.marks.push_back(Mark{MarkKind::ModuleLoaded, 1, 0});
  EXPECT_FALSE(used_cuda(none));
  EventLog call;
  call.calls.emplace_back();
  EXPECT_TRUE(used_cuda(call));
  EventLog op;
  op.ops.emplace_back();
  EXPECT_TRUE(used_cuda(op));
  EventLog compacted;
  compacted.carried.calls = 3;
  EXPECT_TRUE(used_cuda(compacted));
  EventLog shed;
  shed.run.unanalyzed_calls = 1;
  EXPECT_TRUE(used_cuda(shed));
  EventLog context;
  context.marks.push_back(Mark{MarkKind::ContextCreated, 1, 0});
  EXPECT_TRUE(used_cuda(context));
  EventLog cut_short;  // killed inside its first CUDA call: nothing finished, but it may have been CUDA
  cut_short.run.complete = false;
  EXPECT_TRUE(used_cuda(cut_short));
}

// The asynccheck command: a process that made no CUDA call (a shell that ran the program) reports only when no other
// process did, or when monitoring was not on (the line saying why).
TEST(Recording, TheCommandReportsTheProcessesThatUsedCudaAndTheFirstOnlyWithoutThem) {
  EventLog shell, program, off, killed;
  shell.run.end = "_exit";  // dash's way out: incomplete by its end alone
  shell.run.complete = false;
  program.calls.emplace_back();
  off.run.monitoring = "off: no CUDA driver";
  killed.run.complete = false;  // an exit while a call was in flight: it may have used CUDA
  EXPECT_EQ(command_reports({shell, program}), (std::vector<bool>{false, true}));
  EXPECT_EQ(command_reports({shell}), (std::vector<bool>{true}));
  EXPECT_EQ(command_reports({shell, off, program}), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(command_reports({shell, killed}), (std::vector<bool>{false, true}));
  EXPECT_EQ(command_reports({}), std::vector<bool>{});
  // Killed by a signal before its first call returned: it may have used CUDA.
  EventLog signalled;
  signalled.run.end = "signal SIGSEGV";
  signalled.run.complete = false;
  EXPECT_EQ(command_reports({shell, signalled}), (std::vector<bool>{false, true}));
  // compute-sanitizer's launcher beside the program, whose CUPTI it took: the program's line says why.
  EventLog launcher;
  EXPECT_EQ(command_reports({launcher, off}), (std::vector<bool>{false, true}));
}

}  // namespace asynccheck
