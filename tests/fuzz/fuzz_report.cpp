// Fuzz target: the JSON report reader (`asynccheck merge` reads the reports of many processes; they are files people
// copy, edit and collect from CI artifacts). Properties: parse_report never crashes, hangs or allocates without
// bound, and fails with a message naming the report; and what it accepts merges and is written back as a report
// the same reader accepts again, with the same counts (issue 22: "reports that always read back").
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "report/merge.h"
#include "report/report.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace asynccheck::report;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ReportFile file;
  std::string error;
  if (!parse_report(text, "r.json", file, error)) {
    FUZZ_CHECK(!error.empty() && error.rfind("r.json", 0) == 0, "error '%s' does not name the report", error.c_str());
    return 0;
  }
  ReportData merged;
  if (!merge_reports({file}, merged, error)) {
    FUZZ_CHECK(!error.empty(), "merge failed without a message");
    return 0;
  }
  std::ostringstream out;
  write_json(out, merged);
  ReportFile again;
  FUZZ_CHECK(parse_report(out.str(), "again.json", again, error), "a merge of an accepted report is refused: %s\n%s",
             error.c_str(), out.str().c_str());
  FUZZ_CHECK(again.totals.calls_watched == file.totals.calls_watched, "calls_watched %llu read back as %llu",
             static_cast<unsigned long long>(file.totals.calls_watched),
             static_cast<unsigned long long>(again.totals.calls_watched));
  // Sites the input gave twice (the same call site and rule) are one site in the merge: what was written reads back.
  FUZZ_CHECK(again.rows.size() == merged.rows.size(), "%zu sites written, %zu read back", merged.rows.size(),
             again.rows.size());
  for (size_t i = 0; i < again.rows.size(); ++i) {
    FUZZ_CHECK(
        again.rows[i].count == merged.rows[i].count && again.rows[i].total_ns == merged.rows[i].total_ns,
        "site %zu: %llu calls, %llu ns written, %llu, %llu read back", i,
        static_cast<unsigned long long>(merged.rows[i].count), static_cast<unsigned long long>(merged.rows[i].total_ns),
        static_cast<unsigned long long>(again.rows[i].count), static_cast<unsigned long long>(again.rows[i].total_ns));
  }
  return 0;
}
