#include <algorithm>
#include <map>
#include <tuple>

#include "report/baseline.h"
#include "report/report.h"

namespace asynccheck::report {
namespace {

void count_range(SiteRow& row, uint32_t range, uint64_t n) {
  if (range == 0 || n == 0) return;
  for (auto& [id, count] : row.nvtx) {
    if (id == range) {
      count += n;
      return;
    }
  }
  row.nvtx.emplace_back(range, n);
}

}  // namespace

std::vector<SiteRow> aggregate(const EventLog& log, const Analysis& analysis, const std::vector<CallSite>& sites) {
  std::map<std::tuple<std::string, int, std::string>, size_t> index;  // (where, rule, api) -> row
  std::vector<SiteRow> rows;
  std::vector<std::vector<uint64_t>> samples;
  for (size_t i = 0; i < analysis.findings.size(); ++i) {
    const Finding& f = analysis.findings[i];
    const ApiCall& c = log.calls[f.call];
    CallSite site;
    if (c.stack > 0 && c.stack <= sites.size()) site = sites[c.stack - 1];
    const std::string api = c.name < log.api_names.size() ? log.api_names[c.name] : "?";
    // Calls without a resolvable site are grouped per API so that they still aggregate.
    const std::string where = site.known() ? site.where() + "|" + site.frame.function : "?";
    auto key = std::make_tuple(where, static_cast<int>(f.rule), api);
    auto [it, inserted] = index.try_emplace(key, rows.size());
    if (inserted) {
      SiteRow row;
      row.rule = f.rule;
      row.level = f.level;
      row.verdict = f.verdict;
      row.api = api;
      row.site = site;
      row.example = i;
      row.gpu_side = f.rule == rules::RuleId::LegacyStreamSerialization;
      rows.push_back(std::move(row));
      samples.emplace_back();
    }
    SiteRow& row = rows[it->second];
    const uint64_t t = row.gpu_side ? f.gpu_delay_ns : f.held_ns;
    ++row.count;
    row.total_ns += t;
    row.max_ns = std::max(row.max_ns, t);
    row.bytes += c.call.bytes;
    count_range(row, c.nvtx_range, 1);
    samples[it->second].push_back(t);
  }
  // Findings that compaction folded away (analysis/compact.h): their counts, times and bytes join their row; the
  // row always exists, since each key's first finding is kept. The median is that of the kept samples.
  for (const CarriedSite& cs : log.carried.findings) {
    CallSite site;
    if (cs.stack > 0 && cs.stack <= sites.size()) site = sites[cs.stack - 1];
    const std::string api = cs.name < log.api_names.size() ? log.api_names[cs.name] : "?";
    const std::string where = site.known() ? site.where() + "|" + site.frame.function : "?";
    auto it = index.find(std::make_tuple(where, static_cast<int>(cs.rule), api));
    if (it == index.end()) continue;
    SiteRow& row = rows[it->second];
    row.count += cs.count;
    row.total_ns += cs.total_ns;
    row.max_ns = std::max(row.max_ns, cs.max_ns);
    row.bytes += cs.bytes;
    count_range(row, cs.nvtx_range, cs.count);
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    rows[r].fingerprint = fingerprint(rows[r]);
    auto& s = samples[r];
    std::nth_element(s.begin(), s.begin() + static_cast<long>(s.size() / 2), s.end());
    rows[r].median_ns = s[s.size() / 2];
    std::stable_sort(rows[r].nvtx.begin(), rows[r].nvtx.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  // Worst first: by time lost, then the more severe level, then the first seen.
  std::stable_sort(rows.begin(), rows.end(), [](const SiteRow& a, const SiteRow& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.level > b.level;
  });
  return rows;
}

}  // namespace asynccheck::report
