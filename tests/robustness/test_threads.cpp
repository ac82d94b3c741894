// Many threads, and two copies of asynccheck, on the GPU machine (label gpu; each test skips itself without a
// GPU): 16 threads x 100,000 watched calls end without deadlock or crash, the report counts every call exactly
// and drops no activity record at the default buffer size; a second copy of the library in the same process
// stays out with one line and the first one's report is intact.
#include <gtest/gtest.h>

#include <regex>

#include "launch.h"
#include "test_dir.h"

namespace {

using namespace asynccheck_test;

const fs::path kProgram = ASYNCCHECK_THREADS_STRESS;
const fs::path kLibrary = ASYNCCHECK_LIBRARY;

class Threads : public TestDir {
 protected:
  void SetUp() override {
    make_dir("asynccheck-threads", {"bare", "preload", "reports"});
    const Result probe = run({{kProgram.string(), "1", "4"}, {}, dir_ / "bare"});
    if (describe(probe.status) == "exit code 77") {
      GTEST_SKIP() << "SKIPPED: no usable GPU (threads_stress found no CUDA device); run it on the GPU machine: "
                      "ctest -R robust.gpu (docs/gpu-testing.md)";
    }
    ASSERT_EQ(describe(probe.status), "exit code 0") << probe.err;
  }
  std::string options() const {
    return "ASYNCCHECK_OPTIONS=json=" + (dir_ / "reports" / "report.%p.json").string() +
           ":log_file=" + (dir_ / "reports" / "report.%p.txt").string();
  }
  std::vector<std::string> json_reports() const {
    std::vector<std::string> out;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "reports")) {
      if (e.path().extension() == ".json") out.push_back(slurp(e.path()));
    }
    return out;
  }
};

TEST_F(Threads, SixteenThreadsOfAHundredThousandCallsAreCountedExactly) {
  const std::vector<std::string> argv{kProgram.string(), "16", "100000"};
  const Result bare = run({argv, {}, dir_ / "bare"});
  const Result watched = run({argv, {"LD_PRELOAD=" + kLibrary.string(), options()}, dir_ / "preload"});
  ASSERT_EQ(describe(bare.status), "exit code 0") << bare.err;
  ASSERT_EQ(describe(watched.status), "exit code 0") << watched.err;
  EXPECT_EQ(watched.out, bare.out);  // "calls N": the program made the same calls
  std::smatch m;
  ASSERT_TRUE(std::regex_search(watched.out, m, std::regex("calls ([0-9]+)"))) << watched.out;
  const long long made = std::stoll(m[1]);
  EXPECT_GE(made, 16 * 100000);
  const auto reports = json_reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(json_number(reports[0], "calls_watched"), made) << "every call the program made, exactly once";
  EXPECT_EQ(json_number(reports[0], "dropped_records"), 0);
  EXPECT_NE(reports[0].find("\"complete\": true"), std::string::npos);
}

TEST_F(Threads, ASecondCopyOfTheLibraryStaysOut) {
  const fs::path copy = dir_ / "libasynccheck-copy.so";
  fs::copy_file(kLibrary, copy);
  // libunwind and the other libraries are found through the copy's RUNPATH ($ORIGIN): give it the same neighbours.
  for (const fs::directory_entry& e : fs::directory_iterator(kLibrary.parent_path())) {
    if (e.path().filename().string().rfind("libunwind", 0) == 0) fs::copy(e.path(), dir_ / e.path().filename());
  }
  const std::vector<std::string> argv{kProgram.string(), "2", "1000"};
  const Result bare = run({argv, {}, dir_ / "bare"});
  const Result watched =
      run({argv, {"LD_PRELOAD=" + kLibrary.string() + ":" + copy.string(), options()}, dir_ / "preload"});
  EXPECT_EQ(describe(watched.status), describe(bare.status)) << watched.err;
  EXPECT_EQ(watched.out, bare.out);
  EXPECT_NE(watched.err.find("asynccheck: another copy of asynccheck already watches this process; this one ("),
            std::string::npos)
      << watched.err;
  const auto reports = json_reports();
  ASSERT_EQ(reports.size(), 1u) << "only the watching copy reports";
  EXPECT_NE(reports[0].find("\"monitoring\": \"on\""), std::string::npos) << reports[0];
  std::smatch m;
  ASSERT_TRUE(std::regex_search(watched.out, m, std::regex("calls ([0-9]+)")));
  EXPECT_EQ(json_number(reports[0], "calls_watched"), std::stoll(m[1]));
}

}  // namespace
