// From an analysis to what people read: call sites aggregated per rule, the human summary, JSON.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "options/options.h"
#include "report/symbolize.h"

namespace asynccheck::report {

inline constexpr int kJsonSchemaVersion = 1;

// One call site and rule, aggregated over every finding there.
struct SiteRow {
  rules::RuleId rule = rules::RuleId::UndocumentedBlock;
  rules::Level level = rules::Level::Warning;
  Verdict verdict = Verdict::DocumentedObserved;
  std::string api;             // "cudaMemcpyAsync"
  CallSite site;
  uint64_t count = 0;
  uint64_t total_ns = 0;       // host time held (GPU-side findings: time other work was held back)
  uint64_t median_ns = 0;
  uint64_t max_ns = 0;
  uint64_t bytes = 0;
  size_t example = 0;          // index into Analysis::findings of the first finding here
  bool gpu_side = false;       // legacy-stream serialization: measured on the GPU, the host was not held
};

std::vector<SiteRow> aggregate(const EventLog& log, const Analysis& analysis, const std::vector<CallSite>& sites);

// One line of evidence for a finding: what released the call, and how close its end was to the return.
std::string evidence_text(const EventLog& log, const Finding& f);

void write_summary(std::ostream& out, const EventLog& log, const Analysis& analysis, const std::vector<SiteRow>& rows,
                   uint64_t print_limit);
void write_json(std::ostream& out, const EventLog& log, const Analysis& analysis, const std::vector<SiteRow>& rows);

// Analyzes `log` and writes everything the options ask for (recording, JSON, summary). `in_target`: we run inside
// the program under test at its exit (stderr is shared with it).
void emit(EventLog& log, const Options& options, bool in_target);

// Writes `content` to a temporary name beside `path` and renames it into place (never through a symbolic link),
// so that no reader sees a half-written file. False with a message naming the path and the reason.
bool write_file(const std::string& path, const std::string& content, std::string& error);

std::string format_duration(uint64_t ns);
std::string format_bytes(uint64_t bytes);

}  // namespace asynccheck::report
