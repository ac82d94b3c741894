// Monitoring that stops in the middle of a run (GPU machine, label gpu; skips itself without a GPU): a program
// that calls cuptiFinalize(), as another CUPTI client may, ends as it would have, and its report says
// "stopped: WHY" (cupti/health.h), keeps the finding made before, and fails require_monitoring with code 4. The
// same program without the cuptiFinalize is watched to its end ("on").
#include <gtest/gtest.h>

#include "launch.h"
#include "test_dir.h"

namespace {

using namespace asynccheck_test;

const fs::path kProgram = ASYNCCHECK_MONITORING_STOPS;
const fs::path kLibrary = ASYNCCHECK_LIBRARY;

class MonitoringStops : public TestDir {
 protected:
  void SetUp() override { make_dir("asynccheck-stops", {"run"}); }
  // The program under the library, with a JSON report and the options given; the report's text in `json`.
  Result watched(const std::string& mode, const std::string& options, std::string& json) {
    const fs::path report = dir_ / "run" / ("r." + mode + ".json");
    fs::remove(report);
    const Result r = run({{kProgram.string(), mode},
                          {"LD_PRELOAD=" + kLibrary.string(), "ASYNCCHECK_OPTIONS=json=" + report.string() + options},
                          dir_ / "run"});
    json = fs::exists(report) ? slurp(report) : "";
    return r;
  }
};

TEST_F(MonitoringStops, CuptiFinalizeByTheProgramStopsMonitoringAndSaysSo) {
  const Result bare = run({{kProgram.string(), "finalize"}, {}, dir_ / "run"});
  if (describe(bare.status) == "exit code 77") GTEST_SKIP() << "SKIPPED: no usable GPU (monitoring_stops found none)";
  ASSERT_EQ(describe(bare.status), "exit code 0") << bare.err;

  std::string json;
  Result w = watched("finalize", "", json);
  EXPECT_EQ(describe(w.status), "exit code 0") << w.err;
  EXPECT_EQ(w.out, bare.out) << "the program's output, as without asynccheck";
  EXPECT_NE(json.find("\"monitoring\": \"stopped: "), std::string::npos) << json << w.err;
  EXPECT_NE(json.find("copy-async-pageable-h2d"), std::string::npos) << "the finding before the stop is kept: " << json;
  EXPECT_NE(w.err.find("asynccheck: monitoring stopped: "), std::string::npos) << "the summary says it: " << w.err;

  w = watched("finalize", ":require_monitoring=1", json);
  EXPECT_EQ(describe(w.status), "exit code 4") << w.err;
  EXPECT_NE(w.err.find("asynccheck: ERROR: monitoring stopped before the program ended and require_monitoring is "
                       "set: exit code 4"),
            std::string::npos)
      << w.err;
}

TEST_F(MonitoringStops, WithoutTheFinalizeMonitoringStandsToTheEnd) {
  // Probed bare: under the library without a GPU, require_monitoring would turn the 77 into 4.
  const Result bare = run({{kProgram.string(), "control"}, {}, dir_ / "run"});
  if (describe(bare.status) == "exit code 77") GTEST_SKIP() << "SKIPPED: no usable GPU (monitoring_stops found none)";
  std::string json;
  const Result w = watched("control", ":require_monitoring=1", json);
  EXPECT_EQ(describe(w.status), "exit code 0") << w.err;
  EXPECT_NE(json.find("\"monitoring\": \"on\""), std::string::npos) << json << w.err;
  EXPECT_NE(json.find("copy-async-pageable-h2d"), std::string::npos) << json;
}

}  // namespace
