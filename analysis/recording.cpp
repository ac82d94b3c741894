#include "analysis/recording.h"

#include <algorithm>

#include <charconv>
#include <istream>
#include <ostream>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "analysis/monitoring.h"
#include "analysis/names.h"
#include "analysis/replay.h"
#include "analysis/text.h"

namespace asynccheck {
namespace {

constexpr std::string_view kMagic = "asynccheck-recording";
// A recording is input we did not write ourselves (it may come from anywhere): bound what one line can claim.
constexpr size_t kMaxFrames = 512;
constexpr size_t kMaxLine = 1 << 20;
// The capture interns at most 16384 ranges (interpose/nvtx_ranges.h: kMaxRanges) and ids are 32-bit; this bounds the
// table.
constexpr size_t kMaxNvtxRanges = 1 << 20;

// `text` percent-encoded (space, %, control characters and DEL as %XX), so that it is one token; "" as "%00".
void append_percent_encoded(Text& o, std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  if (text.empty()) {  // keeps the field a token; decodes to the empty string
    o << "%00";
    return;
  }
  size_t plain = 0;  // the bytes from here to the current one are written as they are, at once
  for (size_t i = 0; i < text.size(); ++i) {
    const auto ch = static_cast<unsigned char>(text[i]);
    if (ch <= ' ' || ch == '%' || ch == 0x7f) {
      const char escaped[] = {'%', kHex[ch >> 4], kHex[ch & 15]};
      o << text.substr(plain, i - plain) << std::string_view(escaped, sizeof escaped);
      plain = i + 1;
    }
  }
  o << text.substr(plain);
}

// Appends each item's lines and writes them to `o` a block at a time: a whole log's events (write_recording) need
// not be in memory twice.
template <typename Items, typename Append>
void write_in_blocks(std::ostream& o, const Items& items, Append append) {
  constexpr size_t kBlock = 64 * 1024;
  std::string b;
  Text t(b);
  for (const auto& item : items) {
    append(t, item);
    if (t.size() >= kBlock) {
      t.flush();
      o.write(b.data(), static_cast<std::streamsize>(b.size()));
      b.clear();
    }
  }
  t.flush();
  o.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// Writes to `o` what `append` (one of the append_* functions, which a live run calls itself) appends to a string.
template <typename Append>
void write_appended(std::ostream& o, Append append) {
  std::string b;
  append(b);
  o.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// The `mark` lines of marks[first...]: in a recording's steps (append_step) and its tail.
void append_marks(Text& o, const std::vector<Mark>& marks, size_t first) {
  for (size_t i = first; i < marks.size(); ++i)
    o << "mark " << name_of(marks[i].kind) << ' ' << marks[i].time_ns << ' ' << marks[i].thread << '\n';
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

// Parses the fields of one line in order, remembering the first error with the field's name.
class Fields {
 public:
  Fields(std::vector<std::string_view> tokens, std::string& error) : tokens_(std::move(tokens)), error_(error) {}

  bool count(size_t n, std::string_view shape) {
    if (tokens_.size() == n) return true;
    fail("expected " + std::to_string(n - 1) + " fields after '" + std::string(tokens_[0]) + "', got " +
         std::to_string(tokens_.size() - 1) + " (" + std::string(shape) + ")");
    return false;
  }
  // n to m tokens: the last fields are optional.
  bool count(size_t n, size_t m, std::string_view shape) {
    if (tokens_.size() >= n && tokens_.size() <= m) return true;
    fail("expected " + std::to_string(n - 1) + " to " + std::to_string(m - 1) + " fields after '" +
         std::string(tokens_[0]) + "', got " + std::to_string(tokens_.size() - 1) + " (" + std::string(shape) + ")");
    return false;
  }
  size_t size() const { return tokens_.size(); }

  template <typename Int>
  Int num(std::string_view field, int base = 10) {
    std::string_view t = next(field);
    Int v{};
    if (!ok_) return v;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
    if (ec != std::errc() || p != t.data() + t.size()) {
      fail("field '" + std::string(field) + "': '" + std::string(t) + "' is not a " +
           (base == 16 ? "hexadecimal" : "decimal") + " integer in range");
    }
    return v;
  }
  bool flag(std::string_view field) {
    std::string_view t = next(field);
    if (ok_ && t != "0" && t != "1") fail("field '" + std::string(field) + "': '" + std::string(t) + "' is not 0 or 1");
    return t == "1";
  }
  template <typename Enum>
  Enum name(std::string_view field) {
    std::string_view t = next(field);
    if (!ok_) return Enum{};
    if (auto v = parse_name<Enum>(t)) return *v;
    fail("field '" + std::string(field) + "': '" + std::string(t) + "' is not one of: " + valid_names<Enum>());
    return Enum{};
  }
  std::string text(std::string_view field) {
    std::string_view t = next(field);
    std::string out;
    if (ok_ && !percent_decode(t, out))
      fail("field '" + std::string(field) + "': bad percent-encoding in '" + std::string(t) + "'");
    return out;
  }
  bool ok() const { return ok_; }
  void fail(std::string what) {
    if (ok_) error_ = std::move(what);
    ok_ = false;
  }

 private:
  std::string_view next(std::string_view field) {
    if (pos_ >= tokens_.size()) {
      fail("missing field '" + std::string(field) + "'");
      return {};
    }
    return tokens_[pos_++];
  }
  std::vector<std::string_view> tokens_;
  size_t pos_ = 1;
  bool ok_ = true;
  std::string& error_;
};

constexpr std::string_view kCallShape =
    "call corr driver_corr start end thread domain cbid name api async ptds dir bytes src dst stream_kind pending "
    "first "
    "stream_ordered wait stream src_ptr dst_ptr function handle flags stack result [nvtx]";
constexpr size_t kCallTokens = 29;  // without the optional nvtx field
constexpr std::string_view kOpShape =
    "op kind corr start end device context stream bytes copy_kind src_kind dst_kind sync_type name";

void append_call(Text& o, const ApiCall& c) {
  const rules::CallDescription& d = c.call;
  // A call that earlier versions' compaction kept as context only is a `ctxcall`: same fields, not judged.
  o << (c.context_only ? "ctxcall " : "call ") << c.correlation_id << ' ' << c.driver_correlation_id << ' '
    << c.start_ns << ' ' << c.end_ns << ' ' << c.thread << ' ' << name_of(c.domain) << ' ' << c.cbid << ' ' << c.name
    << ' ' << name_of(d.api) << ' ' << d.async_form << ' ' << d.per_thread_variant << ' ' << name_of(d.direction) << ' '
    << d.bytes << ' ' << name_of(d.src) << ' ' << name_of(d.dst) << ' ' << name_of(d.stream) << ' '
    << d.blocking_streams_pending << ' ' << d.first_launch << ' ' << d.stream_ordered_pointer << ' '
    << name_of(d.wait_mode) << ' ' << Hex{c.stream} << ' ' << Hex{c.src_ptr} << ' ' << Hex{c.dst_ptr} << ' '
    << Hex{c.function} << ' ' << Hex{c.handle} << ' ' << c.flags << ' ' << c.stack << ' ' << c.result;
  // Optional (programs with NVTX ranges only), so that other recordings stay readable by older versions.
  if (c.nvtx_range != 0) o << ' ' << c.nvtx_range;
  o << '\n';
}

bool read_call(Fields& f, std::string_view tag, ApiCall& c, size_t api_names, size_t nvtx_ranges) {
  if (f.size() != kCallTokens && f.size() != kCallTokens + 1) {
    f.fail("expected " + std::to_string(kCallTokens - 1) + " or " + std::to_string(kCallTokens) + " fields after '" +
           std::string(tag) + "', got " + std::to_string(f.size() - 1) + " (" + std::string(kCallShape) + ")");
    return false;
  }
  rules::CallDescription& d = c.call;
  c.correlation_id = f.num<uint64_t>("corr");
  c.driver_correlation_id = f.num<uint64_t>("driver_corr");
  c.start_ns = f.num<uint64_t>("start");
  c.end_ns = f.num<uint64_t>("end");
  c.thread = f.num<uint32_t>("thread");
  c.domain = f.name<Domain>("domain");
  c.cbid = f.num<uint32_t>("cbid");
  c.name = f.num<uint16_t>("name");
  d.api = f.name<rules::ApiKind>("api");
  d.async_form = f.flag("async");
  d.per_thread_variant = f.flag("ptds");
  d.direction = f.name<rules::CopyDirection>("dir");
  d.bytes = f.num<uint64_t>("bytes");
  d.src = f.name<rules::MemoryKind>("src");
  d.dst = f.name<rules::MemoryKind>("dst");
  d.stream = f.name<rules::StreamKind>("stream_kind");
  d.blocking_streams_pending = f.flag("pending");
  d.first_launch = f.flag("first");
  d.stream_ordered_pointer = f.flag("stream_ordered");
  d.wait_mode = f.name<rules::WaitMode>("wait");
  c.stream = f.num<uint64_t>("stream", 16);
  c.src_ptr = f.num<uint64_t>("src_ptr", 16);
  c.dst_ptr = f.num<uint64_t>("dst_ptr", 16);
  c.function = f.num<uint64_t>("function", 16);
  c.handle = f.num<uint64_t>("handle", 16);
  c.flags = f.num<uint32_t>("flags");
  c.stack = f.num<uint32_t>("stack");
  c.result = f.num<int32_t>("result");
  if (f.size() == kCallTokens + 1) {
    c.nvtx_range = f.num<uint32_t>("nvtx");
    if (f.ok() && (c.nvtx_range == 0 || c.nvtx_range > nvtx_ranges)) {
      f.fail("field 'nvtx': NVTX range " + std::to_string(c.nvtx_range) +
             " was not declared by an 'nvtx' line (valid: 1 to " + std::to_string(nvtx_ranges) +
             ", or no field for none)");
    }
  }
  if (f.ok() && c.end_ns < c.start_ns) f.fail("call ends (" + std::to_string(c.end_ns) + ") before it starts");
  if (f.ok() && c.name >= api_names)
    f.fail("field 'name': api index " + std::to_string(c.name) + " was not declared by an 'api' line");
  return f.ok();
}

void append_op(Text& o, const GpuOp& op) {
  o << "op " << name_of(op.kind) << ' ' << op.correlation_id << ' ' << op.start_ns << ' ' << op.end_ns << ' '
    << op.device << ' ' << op.context << ' ' << op.stream_id << ' ' << op.bytes << ' ' << int(op.copy_kind) << ' '
    << int(op.src_kind) << ' ' << int(op.dst_kind) << ' ' << int(op.sync_type) << ' ';
  if (op.name.empty()) {
    o << '-';
  } else {
    append_percent_encoded(o, op.name.str());
  }
  o << '\n';
}

bool read_op(Fields& f, GpuOp& op) {
  if (!f.count(14, kOpShape)) return false;
  op.kind = f.name<GpuOpKind>("kind");
  op.correlation_id = f.num<uint64_t>("corr");
  op.start_ns = f.num<uint64_t>("start");
  op.end_ns = f.num<uint64_t>("end");
  op.device = f.num<uint32_t>("device");
  op.context = f.num<uint32_t>("context");
  op.stream_id = f.num<uint32_t>("stream");
  op.bytes = f.num<uint64_t>("bytes");
  op.copy_kind = f.num<uint8_t>("copy_kind");
  op.src_kind = f.num<uint8_t>("src_kind");
  op.dst_kind = f.num<uint8_t>("dst_kind");
  op.sync_type = f.num<uint8_t>("sync_type");
  const std::string name = f.text("name");
  op.name = name == "-" ? KernelName() : KernelName(name);
  if (f.ok() && op.end_ns < op.start_ns) f.fail("op ends before it starts");
  return f.ok();
}

void write_run(std::ostream& o, const RunInfo& r, bool with_args = true) {
  o << "run program=" << percent_encode(r.program) << " pid=" << r.pid << " gpu=" << percent_encode(r.gpu)
    << " driver=" << percent_encode(r.driver) << " runtime=" << percent_encode(r.cuda_runtime)
    << " monitoring=" << percent_encode(r.monitoring) << " dropped=" << r.dropped_records
    << " threshold_ns=" << r.threshold_ns << " module_loading=" << name_of(r.env.module_loading)
    << " launch_blocking=" << r.env.launch_blocking << " complete=" << r.complete;
  // Optional, so that the recording of an ordinary run stays readable by versions that predate the key.
  if (r.end != "exit") o << " end=" << percent_encode(r.end);
  if (!r.fault.empty()) o << " fault=" << percent_encode(r.fault);
  if (r.rank >= 0) o << " rank=" << r.rank << " rank_from=" << percent_encode(r.rank_variable);
  if (r.unanalyzed_calls != 0) o << " unanalyzed=" << r.unanalyzed_calls;
  if (r.cost_threshold_ns != RunInfo{}.cost_threshold_ns) o << " cost_threshold_ns=" << r.cost_threshold_ns;
  if (!r.capture_range.empty()) o << " capture_range=" << percent_encode(r.capture_range);
  o << '\n';
  if (!with_args) return;
  for (const std::string& a : r.args) o << "arg " << percent_encode(a) << '\n';
}

bool read_run(const std::vector<std::string_view>& tokens, RunInfo& r, std::string& error) {
  for (size_t i = 1; i < tokens.size(); ++i) {
    std::string_view t = tokens[i];
    size_t eq = t.find('=');
    if (eq == std::string_view::npos) {
      error = "run: '" + std::string(t) + "' is not key=value";
      return false;
    }
    std::string key(t.substr(0, eq));
    std::vector<std::string_view> one{"run", t.substr(eq + 1)};
    Fields f(one, error);
    if (key == "program")
      r.program = f.text(key);
    else if (key == "pid")
      r.pid = f.num<int>(key);
    else if (key == "gpu")
      r.gpu = f.text(key);
    else if (key == "driver")
      r.driver = f.text(key);
    else if (key == "runtime")
      r.cuda_runtime = f.text(key);
    else if (key == "monitoring") {
      r.monitoring = f.text(key);
      if (f.ok() && !known_monitoring(r.monitoring)) f.fail("field 'monitoring': " + monitoring_error(r.monitoring));
    } else if (key == "dropped")
      r.dropped_records = f.num<uint64_t>(key);
    else if (key == "unanalyzed")
      r.unanalyzed_calls = f.num<uint64_t>(key);
    else if (key == "threshold_ns")
      r.threshold_ns = f.num<uint64_t>(key);
    else if (key == "cost_threshold_ns")
      r.cost_threshold_ns = f.num<uint64_t>(key);
    else if (key == "capture_range") {
      r.capture_range = f.text(key);
      if (f.ok() && !known_capture_range(r.capture_range))
        f.fail(capture_range_error("field 'capture_range'", r.capture_range));
    } else if (key == "module_loading")
      r.env.module_loading = f.name<rules::ModuleLoading>(key);
    else if (key == "launch_blocking")
      r.env.launch_blocking = f.flag(key);
    else if (key == "complete")
      r.complete = f.flag(key);
    else if (key == "end")
      r.end = f.text(key);
    else if (key == "fault")
      r.fault = f.text(key);
    else if (key == "rank")
      r.rank = f.num<uint32_t>(key);  // never negative
    else if (key == "rank_from")
      r.rank_variable = f.text(key);
    else {
      error = "run: unknown key '" + key +
              "' (valid: program, pid, gpu, driver, runtime, monitoring, dropped, unanalyzed, threshold_ns, "
              "cost_threshold_ns, capture_range, module_loading, launch_blocking, complete, end, fault, rank, "
              "rank_from)";
      return false;
    }
    if (!f.ok()) {
      error = "run: " + error;
      return false;
    }
  }
  return true;
}

}  // namespace

void append_percent_encoded(std::string& out, std::string_view text) {
  Text o(out);
  append_percent_encoded(o, text);
}

std::string percent_encode(std::string_view text) {
  std::string out;
  append_percent_encoded(out, text);
  return out;
}

bool percent_decode(std::string_view text, std::string& out) {
  out.clear();
  if (text == "%00") return true;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return false;  // a '%' needs two hex digits after it
    // Unsigned: from_chars accepts a '-' sign for signed types, and "%-1" is not an escape (found by fuzzing).
    unsigned v = 0;
    auto [p, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, v, 16);
    if (ec != std::errc() || p != text.data() + i + 3) return false;
    out += static_cast<char>(v);
    i += 2;
  }
  return true;
}

// What the streaming analysis folded away (analysis/streaming.h). Written only when there is any, so that
// recordings of runs that kept every event stay readable by versions that predate these lines.
void write_carried(std::ostream& o, const Carried& c) {
  if (c.empty()) return;
  o << "carried " << c.calls << ' ' << c.ops << ' ' << c.context_creation_ns << ' ' << c.kind_disagreements << ' '
    << c.captured_calls;
  // Only then, so that other recordings stay as they were (older readers refuse the field, and capture_range too).
  if (c.outside_range_calls != 0) o << ' ' << c.outside_range_calls;
  o << '\n';
  for (const auto& [rule, count] : c.not_observed)
    o << "carried_not_observed " << rules::rule(rule).id << ' ' << count << '\n';
  for (const CarriedSite& s : c.findings) {
    o << "carried_site " << s.stack << ' ' << s.name << ' ' << rules::rule(s.rule).id << ' ' << s.count << ' '
      << s.total_ns << ' ' << s.max_ns << ' ' << s.bytes;
    // Optional like the call's last field: the site's NVTX range is part of its key (streaming.h). Then the split of
    // the held time into waited and own, and how many findings were below the threshold (always written now;
    // without them, as written before the split existed, the time counts as waited, every finding over it).
    o << ' ' << s.nvtx_range << ' ' << s.waited_ns << ' ' << s.own_ns << ' ' << s.below << ' ';
    // The median sketch (median_sketch.h): bucket:calls, comma-separated.
    bool first = true;
    for (const auto& [bucket, calls] : s.median_sketch) {
      o << (first ? "" : ",") << bucket << ':' << calls;
      first = false;
    }
    if (first) o << '-';
    o << '\n';
  }
}

// A judgement of a run analyzed as it went (EventLog::findings): the enums as their numbers (analysis/finding.h).
constexpr std::string_view kFindingShape =
    "finding call rule predicted behavior verdict held_ns waited_ns own_ns gpu_delay_ns below by op gap_ns behind_op "
    "running_op scope note";
constexpr size_t kFindingTokens = 18;

void write_finding(std::ostream& o, const Finding& f) {
  const Evidence& e = f.evidence;
  o << "finding " << f.call << ' ' << rules::rule(f.rule).id << ' ' << rules::rule(f.predicted).id << ' '
    << int(f.predicted_behavior) << ' ' << int(f.verdict) << ' ' << f.held_ns << ' ' << f.waited_ns << ' ' << f.own_ns
    << ' ' << f.gpu_delay_ns << ' ' << f.below_threshold << ' ' << int(e.by) << ' ' << e.op << ' ' << e.gap_ns << ' '
    << e.behind_op << ' ' << e.running_op << ' ' << int(e.scope) << ' '
    << (f.note.empty() ? "-" : percent_encode(f.note)) << '\n';
}

rules::RuleId read_rule(Fields& f, std::string_view field);

bool read_finding(Fields& f, Finding& out) {
  if (f.size() != kFindingTokens) {
    f.fail("expected " + std::to_string(kFindingTokens - 1) + " fields after 'finding', got " +
           std::to_string(f.size() - 1) + " (" + std::string(kFindingShape) + ")");
    return false;
  }
  auto small = [&](std::string_view field, unsigned max) {
    const unsigned v = f.num<unsigned>(field);
    if (f.ok() && v > max)
      f.fail("field '" + std::string(field) + "': " + std::to_string(v) + " is not 0 to " + std::to_string(max));
    return static_cast<uint8_t>(v);
  };
  out.call = f.num<size_t>("call");
  out.rule = read_rule(f, "rule");
  out.predicted = read_rule(f, "predicted");
  out.predicted_behavior = static_cast<rules::HostBehavior>(small("behavior", int(rules::HostBehavior::WaitsForEvent)));
  out.verdict = static_cast<Verdict>(small("verdict", int(Verdict::OwnCost)));
  out.held_ns = f.num<uint64_t>("held_ns");
  out.waited_ns = f.num<uint64_t>("waited_ns");
  out.own_ns = f.num<uint64_t>("own_ns");
  out.gpu_delay_ns = f.num<uint64_t>("gpu_delay_ns");
  out.below_threshold = f.flag("below");
  Evidence& e = out.evidence;
  e.by = static_cast<ReleasedBy>(small("by", int(ReleasedBy::NothingOnGpu)));
  e.op = f.num<int64_t>("op");
  e.gap_ns = f.num<int64_t>("gap_ns");
  e.behind_op = f.num<int64_t>("behind_op");
  e.running_op = f.num<int64_t>("running_op");
  e.scope = static_cast<WaitScope>(small("scope", int(WaitScope::Device)));
  const std::string note = f.text("note");
  if (f.ok() && note != "-") out.note = note;
  // A GPU-side finding (legacy-stream serialization) measures gpu_delay_ns; the host time it held is not split.
  if (f.ok() && out.rule != rules::RuleId::LegacyStreamSerialization && out.waited_ns + out.own_ns != out.held_ns) {
    f.fail("fields 'waited_ns' and 'own_ns' must add up to 'held_ns' (" + std::to_string(out.held_ns) + ")");
  }
  if (f.ok()) out.level = rules::rule(out.rule).level;
  return f.ok();
}

rules::RuleId read_rule(Fields& f, std::string_view field) {
  std::string id = f.text(field);
  if (!f.ok()) return {};
  if (auto r = rules::find_rule(id)) return *r;
  f.fail("field '" + std::string(field) + "': '" + id + "' is not a rule id (asynccheck --list-rules lists them)");
  return {};
}

void write_recording_head(std::ostream& o, const RunInfo& run, const std::vector<std::string>& api_names) {
  o << kMagic << ' ' << kRecordingVersion << '\n';
  write_run(o, run);
  for (size_t i = 0; i < api_names.size(); ++i) o << "api " << i << ' ' << percent_encode(api_names[i]) << '\n';
}

void append_stacks(std::string& out, const std::vector<Stack>& stacks, size_t first, size_t ids_from) {
  Text o(out);
  for (size_t i = first; i < stacks.size(); ++i) {
    const size_t id = ids_from + i + 1;
    o << "stack " << id;
    for (uint64_t ip : stacks[i].frames) o << ' ' << Hex{ip};
    o << '\n';
    // Optional (Python programs only), so that recordings of native programs stay readable by older versions.
    for (const PyFrame& f : stacks[i].python) {
      o << "pyframe " << id << ' ';
      append_percent_encoded(o, f.file);
      o << ' ';
      append_percent_encoded(o, f.function);
      o << ' ' << f.line << '\n';
    }
  }
}

void write_stacks(std::ostream& o, const std::vector<Stack>& stacks, size_t first) {
  write_appended(o, [&](std::string& b) { append_stacks(b, stacks, first); });
}

void append_nvtx_ranges(std::string& out, const std::vector<NvtxRange>& ranges, size_t first, size_t ids_from) {
  Text o(out);
  for (size_t i = first; i < ranges.size(); ++i) {
    o << "nvtx " << (ids_from + i + 1) << ' ';
    append_percent_encoded(o, ranges[i].domain);
    o << ' ';
    append_percent_encoded(o, ranges[i].name);
    // Only for a nested range: recordings without nesting read as they did in versions that had no parents.
    if (ranges[i].parent != 0) o << ' ' << ranges[i].parent;
    o << '\n';
  }
}

void write_nvtx_ranges(std::ostream& o, const std::vector<NvtxRange>& ranges, size_t first) {
  write_appended(o, [&](std::string& b) { append_nvtx_ranges(b, ranges, first); });
}

void append_events(std::string& out, const CallVector& calls, const OpVector& ops) {
  Text o(out);
  for (const ApiCall& c : calls) append_call(o, c);
  for (const GpuOp& op : ops) append_op(o, op);
}

void write_events(std::ostream& o, const CallVector& calls, const OpVector& ops) {
  write_in_blocks(o, calls, append_call);
  write_in_blocks(o, ops, append_op);
}

void append_step(std::string& out, const std::vector<Mark>& marks, size_t first, uint64_t horizon_ns,
                 uint64_t margin_ns) {
  Text o(out);
  append_marks(o, marks, first);
  o << "step " << horizon_ns << ' ' << margin_ns << '\n';
}

void write_recording_tail(std::ostream& o, const EventLog& log, size_t stacks_written, size_t nvtx_written,
                          size_t marks_written) {
  write_run(o, log.run, /*with_args=*/false);  // the args are the head's
  for (const Module& m : log.modules) {
    o << "module " << std::hex << m.base << ' ' << m.end << ' ' << m.bias << std::dec << ' ' << percent_encode(m.path)
      << '\n';
  }
  write_stacks(o, log.stacks, stacks_written);
  for (const Symbol& y : log.symbols) {
    o << "sym " << std::hex << y.ip << std::dec << ' ' << y.line << ' ' << percent_encode(y.function) << ' '
      << percent_encode(y.file) << '\n';
  }
  write_nvtx_ranges(o, log.nvtx_ranges, nvtx_written);
  write_carried(o, log.carried);
  write_appended(o, [&](std::string& b) {
    Text t(b);
    append_marks(t, log.marks, marks_written);
  });
  if (log.analyzed) {
    o << "analyzed\n";
    for (const Finding& f : log.findings) write_finding(o, f);
  }
  o << "end\n";
}

void write_recording(std::ostream& o, const EventLog& log) {
  write_recording_head(o, log.run, log.api_names);
  write_stacks(o, log.stacks, 0);
  write_nvtx_ranges(o, log.nvtx_ranges, 0);
  write_events(o, log.calls, log.ops);
  write_recording_tail(o, log, log.stacks.size(), log.nvtx_ranges.size());
}

// The calls of a recording of events (not of judgements), or of a step's chunk, put in log order and checked. That
// they nest is checked here unless a replay checks it (Replay::give: the chunk with the window's calls around it).
static bool check_calls(CallVector& calls, bool nesting, std::string& error) {
  // A recording written as the run went (report/recording_stream.h) has its events in chunks: in log order, as the
  // analysis reads them. Not a log of judgements: its findings index the calls as they are.
  constexpr InLogOrder by_log{};
  if (!std::is_sorted(calls.begin(), calls.end(), by_log)) std::stable_sort(calls.begin(), calls.end(), by_log);
  for (size_t i = 1; i < calls.size(); ++i) {
    const ApiCall& a = calls[i - 1];
    const ApiCall& b = calls[i];
    if (a.correlation_id == b.correlation_id && a.start_ns == b.start_ns) {
      error = "call " + std::to_string(b.correlation_id) + " (start " + std::to_string(b.start_ns) +
              ") is given twice (a capture writes each call once)";
      return false;
    }
  }
  if (!nesting) return true;
  std::vector<const ApiCall*> all(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) all[i] = &calls[i];
  return calls_nest(std::move(all), error);
}

// Calls on one thread nest, as the calls themselves do (a watched call made inside another is recorded inside
// it): two that overlap without one holding the other were not captured, they were made up or pasted together.
bool calls_nest(std::vector<const ApiCall*> by_thread, std::string& error) {
  std::sort(by_thread.begin(), by_thread.end(), [](const ApiCall* a, const ApiCall* b) {
    if (a->thread != b->thread) return a->thread < b->thread;
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;  // outer first
  });
  std::vector<const ApiCall*> open;  // the calls that hold the current one, innermost last
  for (size_t i = 0; i < by_thread.size(); ++i) {
    const ApiCall& b = *by_thread[i];
    if (i > 0 && by_thread[i - 1]->thread != b.thread) open.clear();
    while (!open.empty() && open.back()->end_ns <= b.start_ns) open.pop_back();
    if (!open.empty() && b.end_ns > open.back()->end_ns) {
      const ApiCall& a = *open.back();
      error = "calls " + std::to_string(a.correlation_id) + " and " + std::to_string(b.correlation_id) +
              " overlap on thread " + std::to_string(a.thread) + " (" + std::to_string(a.start_ns) + "-" +
              std::to_string(a.end_ns) + " and " + std::to_string(b.start_ns) + "-" + std::to_string(b.end_ns) +
              ") without one holding the other: calls on one thread nest";
      return false;
    }
    open.push_back(&b);
  }
  return true;
}

bool read_recording(std::istream& in, EventLog& log, std::string& error, Replay* replay) {
  log = EventLog{};
  std::string line, what;
  size_t lineno = 0;
  bool ended = false, seen_run = false;
  auto fail = [&](const std::string& msg) {
    error = "line " + std::to_string(lineno) + ": " + msg;
    return false;
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.size() > kMaxLine) return fail("line longer than " + std::to_string(kMaxLine) + " bytes");
    if (ended) return fail("content after 'end'");
    std::vector<std::string_view> tokens = split(line);
    if (lineno == 1) {
      if (tokens.size() != 2 || tokens[0] != kMagic) {
        return fail("not an asynccheck recording (expected first line '" + std::string(kMagic) + " " +
                    std::to_string(kRecordingVersion) + "')");
      }
      if (tokens[1] != std::to_string(kRecordingVersion)) {
        return fail("recording version '" + std::string(tokens[1]) +
                    "' is not supported (this asynccheck reads version " + std::to_string(kRecordingVersion) + ")");
      }
      continue;
    }
    if (tokens.empty()) continue;
    std::string_view tag = tokens[0];
    Fields f(tokens, what);
    if (tag == "run") {
      const rules::Environment before = log.run.env;
      if (!read_run(tokens, log.run, what)) return fail(what);
      // The tail's run line says again what the head's said (a run reads its environment once, at its start): the
      // report states the tail's, and the steps before it were analyzed with the head's.
      if (replay && replay->replayed() && !(log.run.env == before))
        return fail(
            "a 'run' line whose module_loading or launch_blocking differ from those the steps before it were "
            "analyzed with (a run has one environment)");
      seen_run = true;
    } else if (tag == "arg") {
      if (!f.count(2, "arg text")) return fail(what);
      std::string arg = f.text("text");
      if (!f.ok()) return fail(what);
      log.run.args.push_back(std::move(arg));
    } else if (tag == "api") {
      if (!f.count(3, "api index name")) return fail(what);
      size_t idx = f.num<size_t>("index");
      std::string name = f.text("name");
      if (f.ok() && idx != log.api_names.size())
        f.fail("api index " + std::to_string(idx) + " out of order (expected " + std::to_string(log.api_names.size()) +
               ")");
      if (f.ok() && log.api_names.size() >= 65535) f.fail("more than 65535 api names");
      if (!f.ok()) return fail(what);
      log.api_names.push_back(std::move(name));
    } else if (tag == "module") {
      if (!f.count(5, "module base end bias path")) return fail(what);
      Module m;
      m.base = f.num<uint64_t>("base", 16);
      m.end = f.num<uint64_t>("end", 16);
      m.bias = f.num<uint64_t>("bias", 16);
      m.path = f.text("path");
      if (f.ok() && m.end < m.base) f.fail("module ends before its base");
      if (!f.ok()) return fail(what);
      log.modules.push_back(std::move(m));
    } else if (tag == "stack") {
      if (f.size() < 2) return fail("stack: missing id");
      if (f.size() - 2 > kMaxFrames) return fail("stack with more than " + std::to_string(kMaxFrames) + " frames");
      size_t id = f.num<size_t>("id");
      if (f.ok() && id != log.stacks.size() + 1)
        f.fail("stack id " + std::to_string(id) + " out of order (expected " + std::to_string(log.stacks.size() + 1) +
               ")");
      Stack s;
      for (size_t i = 2; i < f.size() && f.ok(); ++i) s.frames.push_back(f.num<uint64_t>("frame", 16));
      if (!f.ok()) return fail(what);
      log.stacks.push_back(std::move(s));
    } else if (tag == "pyframe") {
      if (!f.count(5, "pyframe stack file function line")) return fail(what);
      size_t id = f.num<size_t>("stack");
      PyFrame py;
      py.file = f.text("file");
      py.function = f.text("function");
      py.line = f.num<int>("line");
      if (f.ok() && (id == 0 || id > log.stacks.size()))
        f.fail("pyframe of stack " + std::to_string(id) + ", which was not declared");
      if (f.ok() && py.line < 0) f.fail("field 'line': " + std::to_string(py.line) + " is negative");
      if (f.ok() && log.stacks[id - 1].python.size() >= kMaxFrames)
        f.fail("stack " + std::to_string(id) + " with more than " + std::to_string(kMaxFrames) + " Python frames");
      if (!f.ok()) return fail(what);
      log.stacks[id - 1].python.push_back(std::move(py));
    } else if (tag == "sym") {
      if (!f.count(5, "sym ip line function file")) return fail(what);
      Symbol y;
      y.ip = f.num<uint64_t>("ip", 16);
      y.line = f.num<int>("line");
      y.function = f.text("function");
      y.file = f.text("file");
      if (!f.ok()) return fail(what);
      log.symbols.push_back(std::move(y));
    } else if (tag == "nvtx") {
      if (!f.count(4, 5, "nvtx id domain name [parent]")) return fail(what);
      size_t id = f.num<size_t>("id");
      NvtxRange r;
      r.domain = f.text("domain");
      r.name = f.text("name");
      if (f.size() == 5) r.parent = f.num<uint32_t>("parent");
      if (f.ok() && id != log.nvtx_ranges.size() + 1)
        f.fail("nvtx id " + std::to_string(id) + " out of order (expected " +
               std::to_string(log.nvtx_ranges.size() + 1) + ")");
      // A parent declared before its child: the chain of enclosing ranges ends, whatever the file says.
      if (f.ok() && f.size() == 5 && (r.parent == 0 || r.parent >= id))
        f.fail("field 'parent': NVTX range " + std::to_string(r.parent) + " is not a range declared before " +
               std::to_string(id) +
               (id > 1 ? " (valid: 1 to " + std::to_string(id - 1) + "; none for an outermost range)"
                       : " (valid: none: the first range is outermost)"));
      if (f.ok() && log.nvtx_ranges.size() >= kMaxNvtxRanges)
        f.fail("more than " + std::to_string(kMaxNvtxRanges) + " NVTX ranges");
      if (!f.ok()) return fail(what);
      log.nvtx_ranges.push_back(std::move(r));
    } else if (tag == "call" || tag == "ctxcall") {
      ApiCall c;
      if (!read_call(f, tag, c, log.api_names.size(), log.nvtx_ranges.size())) return fail(what);
      c.context_only = tag == "ctxcall";
      if (c.stack > log.stacks.size())
        return fail("call refers to stack " + std::to_string(c.stack) + ", which was not declared");
      log.calls.push_back(c);
    } else if (tag == "op") {
      GpuOp op;
      if (!read_op(f, op)) return fail(what);
      log.ops.push_back(std::move(op));
    } else if (tag == "mark") {
      if (!f.count(4, "mark kind time thread")) return fail(what);
      Mark m;
      m.kind = f.name<MarkKind>("kind");
      m.time_ns = f.num<uint64_t>("time");
      m.thread = f.num<uint32_t>("thread");
      if (!f.ok()) return fail(what);
      log.marks.push_back(m);
    } else if (tag == "carried") {
      if (f.size() != 7 && !f.count(6,
                                    "carried calls ops context_creation_ns kind_disagreements captured_calls "
                                    "[outside_range_calls]")) {
        return fail(what);
      }
      log.carried.calls = f.num<uint64_t>("calls");
      log.carried.ops = f.num<uint64_t>("ops");
      log.carried.context_creation_ns = f.num<uint64_t>("context_creation_ns");
      log.carried.kind_disagreements = f.num<uint64_t>("kind_disagreements");
      log.carried.captured_calls = f.num<uint64_t>("captured_calls");
      if (f.size() == 7) log.carried.outside_range_calls = f.num<uint64_t>("outside_range_calls");
      if (!f.ok()) return fail(what);
    } else if (tag == "carried_not_observed") {
      if (!f.count(3, "carried_not_observed rule count")) return fail(what);
      const rules::RuleId rule = read_rule(f, "rule");
      const uint64_t count = f.num<uint64_t>("count");
      if (f.ok() && log.carried.not_observed.count(rule))
        f.fail("rule '" + std::string(rules::rule(rule).id) + "' given twice");
      if (!f.ok()) return fail(what);
      log.carried.not_observed[rule] = count;
    } else if (tag == "carried_site") {
      if (f.size() != 8 && f.size() != 9 && f.size() != 13) {
        f.fail("expected 7, 8 or 12 fields after 'carried_site', got " + std::to_string(f.size() - 1) +
               " (carried_site stack name rule count total_ns max_ns bytes [nvtx [waited_ns own_ns below sketch]])");
        return fail(what);
      }
      CarriedSite site;
      site.stack = f.num<uint32_t>("stack");
      site.name = f.num<uint16_t>("name");
      site.rule = read_rule(f, "rule");
      site.count = f.num<uint64_t>("count");
      site.total_ns = f.num<uint64_t>("total_ns");
      site.max_ns = f.num<uint64_t>("max_ns");
      site.bytes = f.num<uint64_t>("bytes");
      if (f.size() >= 9) {
        site.nvtx_range = f.num<uint32_t>("nvtx");
        if (f.ok() && site.nvtx_range == 0 && f.size() == 13) {
          // no range: written as 0 when the fields after it are
        } else if (f.ok() && (site.nvtx_range == 0 || site.nvtx_range > log.nvtx_ranges.size())) {
          f.fail("field 'nvtx': NVTX range " + std::to_string(site.nvtx_range) +
                 " was not declared by an 'nvtx' line (valid: 1 to " + std::to_string(log.nvtx_ranges.size()) +
                 ", or no field for none)");
        }
      }
      site.waited_ns = site.total_ns;
      if (f.size() == 13) {
        site.waited_ns = f.num<uint64_t>("waited_ns");
        site.own_ns = f.num<uint64_t>("own_ns");
        site.below = f.num<uint64_t>("below");
        const std::string sketch = f.text("sketch");
        uint64_t in_sketch = 0;
        if (f.ok() && sketch != "-") {
          std::istringstream parts(sketch);
          std::string part;
          while (f.ok() && std::getline(parts, part, ',')) {
            unsigned bucket = 0;
            unsigned long long calls = 0;
            char colon = 0;
            std::istringstream one(part);
            if (!(one >> bucket >> colon >> calls) || colon != ':' || !one.eof() || bucket > 1024 || calls == 0 ||
                site.median_sketch.count(static_cast<uint16_t>(bucket))) {
              f.fail("field 'sketch': '" + part + "' is not bucket:calls (a bucket 0 to 1024 once, calls at least 1)");
              break;
            }
            site.median_sketch[static_cast<uint16_t>(bucket)] = calls;
            in_sketch += calls;
          }
          if (f.ok() && in_sketch != site.count) {
            f.fail("field 'sketch': " + std::to_string(in_sketch) + " calls in its buckets, 'count' says " +
                   std::to_string(site.count));
          }
        }
        if (f.ok() && site.waited_ns + site.own_ns != site.total_ns &&
            site.rule != rules::RuleId::LegacyStreamSerialization) {
          f.fail("fields 'waited_ns' and 'own_ns' must add up to 'total_ns' (" + std::to_string(site.total_ns) + ")");
        }
        if (f.ok() && site.below > site.count) f.fail("field 'below': more than 'count' findings");
      }
      if (f.ok() && site.stack > log.stacks.size())
        f.fail("field 'stack': stack " + std::to_string(site.stack) + " was not declared");
      if (f.ok() && site.name >= log.api_names.size())
        f.fail("field 'name': api index " + std::to_string(site.name) + " was not declared by an 'api' line");
      if (f.ok() && site.count == 0) f.fail("field 'count': a carried site has at least one finding");
      if (!f.ok()) return fail(what);
      log.carried.findings.push_back(site);
    } else if (tag == "step") {
      if (!f.count(3, "step horizon_ns margin_ns")) return fail(what);
      const uint64_t horizon = f.num<uint64_t>("horizon_ns");
      const uint64_t margin = f.num<uint64_t>("margin_ns");
      if (f.ok() && log.analyzed) f.fail("a 'step' after the 'analyzed' line (a recording of judgements takes none)");
      if (!f.ok()) return fail(what);
      if (replay) {
        if (!check_calls(log.calls, false, what) || !replay->step(log, horizon, margin, what)) return fail(what);
      }
    } else if (tag == "analyzed") {
      if (!f.count(1, "analyzed")) return fail(what);
      if (replay && replay->replayed())
        return fail("an 'analyzed' line after 'step' lines (a recording of events, analyzed in its steps)");
      log.analyzed = true;
    } else if (tag == "finding") {
      Finding fd;
      if (!log.analyzed) return fail("a 'finding' before the 'analyzed' line");
      if (!read_finding(f, fd)) return fail(what);
      if (fd.call >= log.calls.size())
        return fail("finding of call " + std::to_string(fd.call) + ", which the recording does not hold (valid: 0 to " +
                    std::to_string(log.calls.size()) + " - 1)");
      for (int64_t op : {fd.evidence.op, fd.evidence.behind_op, fd.evidence.running_op}) {
        if (op < -1 || op >= static_cast<int64_t>(log.ops.size())) {
          return fail("finding names GPU operation " + std::to_string(op) +
                      ", which the recording does not hold (valid: -1 for none, or 0 to " +
                      std::to_string(log.ops.size()) + " - 1)");
        }
      }
      log.findings.push_back(std::move(fd));
    } else if (tag == "end") {
      ended = true;
    } else {
      return fail("unknown record '" + std::string(tag) +
                  "' (valid: run, arg, api, module, stack, pyframe, sym, nvtx, call, ctxcall, op, mark, step, carried, "
                  "carried_not_observed, carried_site, analyzed, finding, end)");
    }
  }
  if (lineno == 0) {
    error = "empty file: not an asynccheck recording";
    return false;
  }
  // What no capture writes: a recording that does not say which run it is (every capture writes its `run` line
  // first), and a call given twice (the same correlation id at the same start: a line repeated, which read as many
  // calls, "host blocked 5219 s" from one).
  if (!seen_run) {
    error = "line " + std::to_string(lineno) +
            ": the recording has no 'run' line (every recording states its run: run program=... pid=...)";
    return false;
  }
  if (!ended) log.run.complete = false;  // truncated: keep what was read, say so
  if (!log.analyzed) {
    if (!check_calls(log.calls, !(replay && replay->replayed()), error)) return false;
    constexpr InLogOrder by_log{};
    if (!std::is_sorted(log.ops.begin(), log.ops.end(), by_log))
      std::stable_sort(log.ops.begin(), log.ops.end(), by_log);
  }
  // The events after the last step, then everything left is judged.
  if (replay && !replay->finish(log, what)) {
    error = "line " + std::to_string(lineno) + ": " + what;
    return false;
  }
  return true;
}

namespace {

// A watched call (kept, compacted or shed), GPU work, or a context created.
bool signs_of_cuda(const EventLog& log) {
  if (!log.calls.empty() || !log.ops.empty() || log.carried.calls != 0 || log.carried.ops != 0 ||
      log.run.unanalyzed_calls != 0) {
    return true;
  }
  return std::any_of(log.marks.begin(), log.marks.end(),
                     [](const Mark& m) { return m.kind == MarkKind::ContextCreated; });
}

}  // namespace

bool used_cuda(const EventLog& log) {
  // Incomplete: a call was in flight (a process killed inside its first CUDA call), or a lock could not be taken
  // in time; what it did is unknown, so it reports.
  return signs_of_cuda(log) || !log.run.complete;
}

std::vector<bool> command_reports(const std::vector<EventLog>& logs) {
  // In a hand-off, an end by _exit, _Exit or quick_exit marks the run incomplete by itself (dash leaves by _exit):
  // then only the signs count. An incomplete exit, or a signal, may have come in the middle of a first CUDA call.
  auto used = [](const EventLog& log) {
    const bool quick_end = log.run.end == "_exit" || log.run.end == "_Exit" || log.run.end == "quick_exit";
    return signs_of_cuda(log) || (!log.run.complete && !quick_end);
  };
  // Reported for a reason of its own: it used CUDA, or monitoring was not on (the line saying why).
  auto own_reason = [&](const EventLog& log) { return used(log) || !monitoring_whole(log.run.monitoring); };
  const bool any = std::any_of(logs.begin(), logs.end(), own_reason);
  std::vector<bool> out;
  for (const EventLog& log : logs) out.push_back(!any || own_reason(log));
  return out;
}

}  // namespace asynccheck
