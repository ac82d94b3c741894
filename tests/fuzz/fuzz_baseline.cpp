// Fuzz target: the baseline file parser (`--baseline FILE`; the file is edited by people and lives in repos).
// Properties: parse_baseline never crashes, hangs or allocates without bound; it fails with a message and leaves
// its output unchanged; on success every fingerprint is a non-empty part of one line. And the documented promise
// of baseline.h, "a saved baseline always loads again": the baseline_text of call sites named by the input parses,
// and holds exactly their fingerprints (so mark_baseline finds every one of them).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "report/baseline.h"
#include "rules/catalog.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using asynccheck::report::SiteRow;

// Sites whose API, function, file and module are pieces of the input: thirds of it, and the whole of it (longer
// than kMaxFingerprintField when the input is, so the cut and hash are exercised).
std::vector<SiteRow> rows(std::string_view text) {
  const auto all = asynccheck::rules::all_rules();
  const size_t third = text.size() / 3;
  const std::string a(text.substr(0, third)), b(text.substr(third, third)), c(text.substr(2 * third));
  std::vector<SiteRow> out(4);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].rule = all[(text.empty() ? i : static_cast<unsigned char>(text[0]) + i) % all.size()].rule;
  }
  out[0].api = a;  // symbolized site: file
  out[0].site.frame.ip = 0x401000;
  out[0].site.frame.function = b;
  out[0].site.frame.file = c;
  out[1].api = c;  // no source file: module
  out[1].site.frame.ip = 0x401000;
  out[1].site.frame.function = a;
  out[1].site.frame.module = b;
  out[2].api = std::string(text);  // unknown site
  out[3].api = "cudaFree";         // one field the whole input
  out[3].site.frame.ip = 1;
  out[3].site.frame.function = std::string(text);
  out[3].site.frame.file = std::string(text);
  return out;
}

void check_round_trip(std::string_view text) {
  std::vector<SiteRow> sites = rows(text);
  const std::string saved = asynccheck::report::baseline_text(sites);
  std::set<std::string> loaded;
  std::string error;
  FUZZ_CHECK(asynccheck::report::parse_baseline(saved, "saved.baseline", loaded, error),
             "a saved baseline does not load: %s", error.c_str());
  // (A field ending in a space once lost it on loading: fixed by escaping edge spaces; the reproducer is in the
  // corpus as fixed-trailing-space-in-file-name.)
  asynccheck::report::mark_baseline(sites, loaded);
  for (const SiteRow& row : sites) {
    const std::string fp = asynccheck::report::fingerprint(row);
    FUZZ_CHECK(loaded.count(fp) == 1, "a saved fingerprint is not in the loaded baseline: '%s'", fp.c_str());
    FUZZ_CHECK(row.in_baseline, "mark_baseline missed a saved site: '%s'", fp.c_str());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_round_trip(text);

  std::set<std::string> known = {"sentinel"};
  std::string error;
  if (!asynccheck::report::parse_baseline(text, "fuzz.baseline", known, error)) {
    FUZZ_CHECK(!error.empty(), "parse_baseline failed without a message");
    FUZZ_CHECK(known.size() == 1 && *known.begin() == "sentinel", "parse_baseline failed but changed its output");
    return 0;
  }
  known.erase("sentinel");
  size_t total = 0;
  for (const std::string& fp : known) {
    FUZZ_CHECK(!fp.empty(), "parse_baseline produced an empty fingerprint");
    FUZZ_CHECK(fp.find('\n') == std::string::npos, "a fingerprint spans lines");
    total += fp.size();
  }
  FUZZ_CHECK(total <= size, "the fingerprints (%zu bytes) are larger than the file (%zu bytes)", total, size);
  return 0;
}
