#include <algorithm>
#include <map>

#include "analysis/median_sketch.h"
#include "report/baseline.h"
#include "report/report.h"

namespace asynccheck::report {
namespace {

// Findings are counted per range id while aggregating, then named (resolve_ranges): ids are the log's.
void count_range(std::vector<std::pair<uint32_t, uint64_t>>& counts, uint32_t range, uint64_t n) {
  if (range == 0 || n == 0) return;
  for (auto& [id, count] : counts) {
    if (id == range) {
      count += n;
      return;
    }
  }
  counts.emplace_back(range, n);
}

std::vector<RangeCount> resolve_ranges(const EventLog& log, const std::vector<std::pair<uint32_t, uint64_t>>& counts) {
  std::vector<RangeCount> out;
  for (const auto& [id, count] : counts) {
    const std::vector<const NvtxRange*> chain = nvtx_chain(log, id);
    RangeCount range{chain.back()->name, chain.back()->domain, 0, {}};
    for (size_t i = 0; i + 1 < chain.size(); ++i) range.enclosing.push_back({chain[i]->domain, chain[i]->name});
    add_range(out, range, count);
  }
  sort_ranges(out);
  return out;
}

// The timeline of finding `f`'s call: what the analysis decided about it (its waited part, the work its evidence
// names), placed in time. Work CUPTI could not time (start 0) proves nothing and is not drawn.
SiteTimeline timeline_of(const EventLog& log, const Finding& f) {
  const ApiCall& c = log.calls[f.call];
  SiteTimeline t;
  t.thread = c.thread;
  t.start_ns = c.start_ns;
  t.end_ns = c.end_ns;
  const Evidence& e = f.evidence;
  const bool gpu_side = f.rule == rules::RuleId::LegacyStreamSerialization;
  auto op_at = [&](int64_t i) {
    return i >= 0 && static_cast<size_t>(i) < log.ops.size() ? &log.ops[size_t(i)] : nullptr;
  };
  // Waited ends where the work that released the call ended (never after the return) and is waited_ns long:
  // from the call's start, or from its own transfer's start when nothing held that back (analyze.cpp, attribute).
  t.wait_start_ns = t.wait_end_ns = c.start_ns;
  if (const GpuOp* op = op_at(e.op); op && !gpu_side && f.waited_ns > 0) {
    t.wait_end_ns = std::clamp(op->end_ns, c.start_ns, c.end_ns);
    t.wait_start_ns = t.wait_end_ns - std::min(f.waited_ns, t.wait_end_ns - c.start_ns);
  }
  auto add = [&](int64_t i, TimelineWork::Role role) {
    const GpuOp* op = op_at(i);
    if (!op || op->start_ns == 0) return;
    for (const TimelineWork& w : t.work) {
      if (w.start_ns == op->start_ns && w.end_ns == op->end_ns && w.stream == op->stream_id) return;  // named twice
    }
    t.work.push_back(TimelineWork{role, op->stream_id, op->start_ns, op->end_ns, gpu_work_text(*op)});
  };
  using Role = TimelineWork::Role;
  add(e.op, gpu_side ? Role::HeldBack : Role::Released);
  add(e.behind_op, gpu_side ? Role::HeldBack : Role::QueuedBehind);
  add(e.running_op, Role::StillRunning);
  return t;
}

}  // namespace

const NvtxRange& nvtx_range(const EventLog& log, uint32_t id) {
  static const NvtxRange kUnknown{"", "?"};
  return id > 0 && id <= log.nvtx_ranges.size() ? log.nvtx_ranges[id - 1] : kUnknown;
}

std::vector<const NvtxRange*> nvtx_chain(const EventLog& log, uint32_t id) {
  std::vector<const NvtxRange*> chain{&nvtx_range(log, id)};
  // Parents are smaller ids (recording.cpp checks it; the capture interns a parent first), so the walk ends.
  for (uint32_t p = chain.back()->parent; p != 0 && p < id; p = chain.back()->parent) {
    chain.push_back(&nvtx_range(log, p));
    id = p;
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

std::string nvtx_path(const EventLog& log, uint32_t id) {
  std::string s;
  for (const NvtxRange* r : nvtx_chain(log, id)) s += (s.empty() ? "" : " > ") + r->name;
  return s;
}

void add_range(std::vector<RangeCount>& ranges, const RangeCount& range, uint64_t n) {
  if (n == 0) return;
  for (RangeCount& r : ranges) {
    if (r.same_range(range)) {
      r.count += n;
      return;
    }
  }
  ranges.push_back(range);
  ranges.back().count = n;
}

void sort_ranges(std::vector<RangeCount>& ranges) {
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const RangeCount& a, const RangeCount& b) { return a.count > b.count; });
}

std::string site_key(const CallSite& site, rules::RuleId rule, std::string_view api) {
  // Calls without a resolvable site are grouped per API so that they still aggregate. NUL separates the parts:
  // no name holds one.
  std::string key = site.known() ? site.where() + '\0' + site.frame.function : "?";
  return key + '\0' + std::to_string(static_cast<int>(rule)) + '\0' + std::string(api);
}

SiteExample describe_finding(const EventLog& log, const Finding& f) {
  SiteExample e;
  e.predicted = rules::rule(f.predicted).id;
  e.predicted_behavior = rules::host_behavior_text(f.predicted_behavior);
  e.released_by = released_by_text(f.evidence.by);
  e.evidence = evidence_text(log, f);
  e.note = f.note;
  return e;
}

std::vector<SiteRow> aggregate(const EventLog& log, const Analysis& analysis, const std::vector<CallSite>& sites,
                               uint64_t site_threshold_ns) {
  std::map<std::string, size_t> index;  // site_key -> row
  std::vector<SiteRow> rows;
  std::vector<std::vector<uint64_t>> samples;
  std::vector<MedianSketch> sketches;  // per row: every finding's time, carried ones included
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> ranges;  // per row: NVTX range id -> findings
  std::vector<size_t> worst;  // per row: its longest finding kept (the first of equals), for its timeline
  for (size_t i = 0; i < analysis.findings.size(); ++i) {
    const Finding& f = analysis.findings[i];
    const ApiCall& c = log.calls[f.call];
    CallSite site;
    if (c.stack > 0 && c.stack <= sites.size()) site = sites[c.stack - 1];
    const std::string api = c.name < log.api_names.size() ? log.api_names[c.name] : "?";
    auto [it, inserted] = index.try_emplace(site_key(site, f.rule, api), rows.size());
    if (inserted) {
      SiteRow row;
      row.rule = f.rule;
      row.level = f.level;
      row.verdict = f.verdict;
      row.api = api;
      row.site = site;
      row.example = i;
      row.shown = describe_finding(log, f);
      row.gpu_side = f.rule == rules::RuleId::LegacyStreamSerialization;
      rows.push_back(std::move(row));
      samples.emplace_back();
      sketches.emplace_back();
      ranges.emplace_back();
      worst.push_back(i);
    }
    SiteRow& row = rows[it->second];
    // The example is the site's first finding over the threshold (its first finding when none is): one whose
    // evidence shows the wait the row is reported for. The streaming analysis keeps each key's first findings (streaming.h).
    if (!f.below_threshold && analysis.findings[row.example].below_threshold) {
      row.example = i;
      row.shown = describe_finding(log, f);
    }
    const uint64_t t = row.gpu_side ? f.gpu_delay_ns : f.held_ns;
    ++row.count;
    row.total_ns += t;
    row.waited_ns += row.gpu_side ? t : f.waited_ns;
    row.own_ns += row.gpu_side ? 0 : f.own_ns;
    row.below += f.below_threshold ? 1 : 0;
    if (t > row.max_ns) worst[it->second] = i;
    row.max_ns = std::max(row.max_ns, t);
    row.bytes += c.call.bytes;
    count_range(ranges[it->second], c.nvtx_range, 1);
    samples[it->second].push_back(t);
    ++sketches[it->second][sketch_bucket(t)];
  }
  // Findings the streaming analysis folded away (analysis/streaming.h): their counts, times and bytes join their row; the
  // row always exists, since each key's first finding is kept. The median comes from every finding's bucket (median_sketch.h).
  for (const CarriedSite& cs : log.carried.findings) {
    CallSite site;
    if (cs.stack > 0 && cs.stack <= sites.size()) site = sites[cs.stack - 1];
    const std::string api = cs.name < log.api_names.size() ? log.api_names[cs.name] : "?";
    auto it = index.find(site_key(site, cs.rule, api));
    if (it == index.end()) continue;
    SiteRow& row = rows[it->second];
    row.count += cs.count;
    row.total_ns += cs.total_ns;
    row.waited_ns += cs.waited_ns;
    row.own_ns += cs.own_ns;
    row.below += cs.below;
    for (const auto& [bucket, n] : cs.median_sketch) sketches[it->second][bucket] += n;
    row.max_ns = std::max(row.max_ns, cs.max_ns);
    row.bytes += cs.bytes;
    count_range(ranges[it->second], cs.nvtx_range, cs.count);
  }
  // A site of only below-threshold waits is reported when they add up; otherwise it is only counted (not_observed).
  std::vector<SiteRow> kept;
  for (size_t r = 0; r < rows.size(); ++r) {
    const bool adds_up = site_threshold_ns != 0 && rows[r].waited_ns >= site_threshold_ns;
    if (rows[r].below == rows[r].count && !adds_up) continue;
    if (kept.size() != r) {
      samples[kept.size()] = std::move(samples[r]);
      sketches[kept.size()] = std::move(sketches[r]);
      ranges[kept.size()] = std::move(ranges[r]);
      worst[kept.size()] = worst[r];
    }
    kept.push_back(std::move(rows[r]));
  }
  rows = std::move(kept);
  for (size_t r = 0; r < rows.size(); ++r) {
    rows[r].fingerprint = fingerprint(rows[r]);
    auto& s = samples[r];
    std::nth_element(s.begin(), s.begin() + static_cast<long>(s.size() / 2), s.end());
    // Exact while every call's time is a sample; from the sketch beyond, so that a compacted log (which keeps
    // kExactMedianCalls samples of each key) reports the same median.
    rows[r].median_ns = rows[r].count <= kExactMedianCalls && s.size() == rows[r].count
                            ? s[s.size() / 2]
                            : std::min(rows[r].max_ns, sketch_median(sketches[r]));
    rows[r].nvtx = resolve_ranges(log, ranges[r]);
    rows[r].timeline = timeline_of(log, analysis.findings[worst[r]]);
  }
  // Worst first: by time lost, then the more severe level, then the first seen.
  std::stable_sort(rows.begin(), rows.end(), [](const SiteRow& a, const SiteRow& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.level > b.level;
  });
  return rows;
}

}  // namespace asynccheck::report
