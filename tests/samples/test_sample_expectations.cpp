// The samples' expected findings (samples/*/expect.txt), checked without a GPU against the recordings committed
// in tests/fixtures/recordings (made on the GPU machine with scripts/record-samples.sh), and against the samples'
// sources. With ASYNCCHECK_RECORDINGS=DIR the same checks run on fresh recordings (the GPU end-to-end test).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "analysis/recording.h"
#include "tests/support/expect.h"
#include "version.h"

namespace fs = std::filesystem;

namespace asynccheck {
namespace {

const fs::path kSource = ASYNCCHECK_SOURCE_DIR;

struct Case {
  std::string sample;
  expect::Block block;
  std::string id() const { return sample + "." + block.name; }
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& dir : fs::directory_iterator(kSource / "samples")) {
    const fs::path file = dir.path() / "expect.txt";
    if (!fs::exists(file)) continue;
    std::vector<expect::Block> blocks;
    std::string error;
    if (!expect::parse(file, blocks, error)) {
      ADD_FAILURE() << error;
      continue;
    }
    for (auto& b : blocks) cases.push_back({dir.path().filename(), b});
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.id() < b.id(); });
  return cases;
}

fs::path recordings_dir() {
  const char* live = std::getenv("ASYNCCHECK_RECORDINGS");
  return live && *live ? fs::path(live) : kSource / "tests" / "fixtures" / "recordings";
}

// The SARIF's informationUri is the home page this build was configured with (CMakeLists.txt): the goldens hold a
// placeholder instead (an absolute URI too, for the schema check), so that they do not depend on the install prefix.
std::string without_home_page(std::string text) {
  const std::string uri = ASYNCCHECK_HOMEPAGE_URL, placeholder = "https://home-page.invalid/as-configured";
  for (size_t at = text.find(uri); at != std::string::npos; at = text.find(uri, at + placeholder.size()))
    text.replace(at, uri.size(), placeholder);
  return text;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// tests/fixtures/recordings/PENDING: the runs of samples added since the last GPU recording, one id
// ("sample.run") per line, '#' comments. Their missing fixtures are reported, not failed, until they are recorded.
std::set<std::string> pending_recordings() {
  std::set<std::string> ids;
  std::ifstream in(kSource / "tests" / "fixtures" / "recordings" / "PENDING");
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string id;
    if (words >> id) ids.insert(id);
  }
  return ids;
}

// nvtx= on expect lines (docs/expected-findings.md): the site's findings must all be in that innermost range.
TEST(SampleExpectations, NvtxRangesAreChecked) {
  const fs::path file = fs::temp_directory_path() / ("asynccheck_expect_nvtx_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(file) << "run r prog\n"
                         "expect copy-sync-d2h cudaMemcpy a.cu:1 nvtx=forward\n"
                         "expect copy-sync-d2h cudaMemcpy a.cu:2 nvtx=forward nvtx-domain=lib\n"
                         "expect copy-sync-d2h cudaMemcpy a.cu:3 nvtx=-\n"
                         "expect copy-sync-d2h cudaMemcpy a.cu:4 nvtx=forward\n"
                         "expect copy-sync-d2h cudaMemcpy a.cu:5\n";
  std::vector<expect::Block> blocks;
  std::string error;
  ASSERT_TRUE(expect::parse(file, blocks, error)) << error;
  auto row = [](int line, std::vector<report::RangeCount> nvtx) {
    report::SiteRow r;
    r.rule = rules::RuleId::CopySyncD2H;
    r.api = "cudaMemcpy";
    r.site.frame.file = "/src/a.cu";
    r.site.frame.line = line;
    r.count = 2;
    r.nvtx = std::move(nvtx);
    return r;
  };
  const report::RangeCount forward{"forward", "", 2}, lib{"forward", "lib", 2}, once{"forward", "", 1};
  const std::vector<report::SiteRow> rows = {row(1, {forward}), row(2, {lib}), row(3, {}), row(4, {once}),
                                             row(5, {lib})};
  EXPECT_EQ(
      expect::check(blocks[0], rows),
      (std::vector<std::string>{"run r: copy-sync-d2h for cudaMemcpy at a.cu:4 must be in NVTX range \"forward\", "
                                "got in NVTX range \"forward\" for 1 of 2 calls"}));
  std::ofstream(file) << "run r prog\nexpect copy-sync-d2h cudaMemcpy a.cu:1 nvtx-domain=lib\n";
  EXPECT_FALSE(expect::parse(file, blocks, error));
  EXPECT_EQ(error, file.string() + ":2: nvtx-domain= needs nvtx=NAME");
  std::ofstream(file) << "run r prog\nexpect copy-sync-d2h cudaMemcpy a.cu:1 nvtx=a nvtx=b\n";
  EXPECT_FALSE(expect::parse(file, blocks, error));
  EXPECT_EQ(error, file.string() + ":2: 'nvtx=a' is not nvtx=NAME, nvtx=- or nvtx-domain=DOMAIN (each at most once)");
  fs::remove(file);
}

TEST(SampleExpectations, EveryNamedLineHoldsTheNamedCall) {
  const auto cases = all_cases();
  ASSERT_FALSE(cases.empty());
  for (const Case& c : cases) {
    for (const expect::Line& l : c.block.lines) {
      std::ifstream src(kSource / "samples" / c.sample / l.file);
      ASSERT_TRUE(src) << c.id() << ": no source " << l.file;
      std::string text;
      for (int i = 0; i < l.line && std::getline(src, text); ++i) {}
      const std::string needle = l.api == "cudaLaunchKernel" ? "<<<" : l.api;
      EXPECT_NE(text.find(needle), std::string::npos)
          << c.id() << ": " << l.file << ":" << l.line << " does not contain " << needle << " (expect.txt line "
          << l.source_line << "): '" << text << "'";
    }
  }
}

TEST(SampleExpectations, RecordedRunsMeetTheirExpectations) {
  const fs::path dir = recordings_dir();
  const char* env = std::getenv("ASYNCCHECK_RECORDINGS");
  const bool live = env != nullptr && *env != '\0';  // fresh recordings of every run (the GPU test): none pending
  std::set<std::string> pending = live ? std::set<std::string>{} : pending_recordings();
  for (const Case& c : all_cases()) {
    const fs::path rec = dir / (c.id() + ".rec");
    if (pending.erase(c.id()) > 0) {
      EXPECT_FALSE(fs::exists(rec)) << rec << " is committed: remove " << c.id()
                                    << " from tests/fixtures/recordings/PENDING";
      std::cout << "PENDING: " << c.id() << " has no committed GPU recording yet (tests/fixtures/recordings/PENDING); "
                << "its expectations are checked by the GPU test (ctest -L gpu) and by the analysis unit tests\n";
      continue;
    }
    if (!fs::exists(rec)) {
      ADD_FAILURE() << "no recording " << rec << ": record it on a GPU machine with scripts/record-samples.sh";
      continue;
    }
    std::ifstream in(rec);
    EventLog log;
    std::string error;
    ASSERT_TRUE(read_recording(in, log, error)) << rec << ": " << error;
    AnalysisOptions options;
    options.threshold_ns = log.run.threshold_ns;
    const Analysis a = analyze(log, options);
    const report::ReportData data = report::make_report(log, a);
    const auto& rows = data.rows;
    for (const std::string& failure : expect::check(c.block, rows)) ADD_FAILURE() << c.sample << ": " << failure;
    // The whole report is pinned too, as JSON and as SARIF (fixtures only): any change to rules, attribution or
    // format shows here.
    if (!std::getenv("ASYNCCHECK_RECORDINGS")) {
      report::ReportData pinned = data;
      // The recordings name files as they were on the GPU machine: its checkout is the source root, so that
      // SARIF paths do not depend on where this test runs.
      const std::string file = log.run.program;
      pinned.source_root = file.substr(0, file.find("/build/"));
      for (const auto& [ext, writer] :
           {std::pair{".json", &report::write_json}, std::pair{".sarif", &report::write_sarif}}) {
        std::ostringstream out;
        writer(out, pinned);
        const std::string text = without_home_page(out.str());
        const fs::path golden = dir / (c.id() + ext);
        if (std::getenv("ASYNCCHECK_UPDATE_GOLDEN")) std::ofstream(golden) << text;
        EXPECT_EQ(text, read_file(golden))
            << golden
            << " differs; if the change is intended, rerun with ASYNCCHECK_UPDATE_GOLDEN=1 and review the diff";
      }
    }
  }
  for (const std::string& id : pending)
    ADD_FAILURE() << "tests/fixtures/recordings/PENDING names " << id << ", which no expect.txt runs";
}

}  // namespace
}  // namespace asynccheck
