// The ends of test_exit_paths.cpp with CUDA work in flight and monitoring on (GPU machine, label gpu): killed
// inside cudaStreamSynchronize, crashing or leaving with _exit after CUDA calls, exit() from a thread while
// another still makes CUDA calls, a forked child after CUDA was initialized, a forked child that execs another
// CUDA program. Each ends as it does bare, its report holds the calls watched so far, and the reporter never runs
// into signal_timeout (no deadlock with CUPTI). Without a GPU every test skips itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>

#include "launch.h"
#include "test_dir.h"

namespace {

using namespace asynccheck_test;

const fs::path kProgram = ASYNCCHECK_CUDA_EXIT_PATHS;
const fs::path kLibrary = ASYNCCHECK_LIBRARY;

class CudaExitPaths : public TestDir {
 protected:
  void SetUp() override {
    make_dir("asynccheck-robust-gpu", {"bare", "preload", "reports"});
    const Result probe = run({{kProgram.string(), "exit"}, {}, dir_ / "bare"});
    if (describe(probe.status) == "exit code 77") {
      GTEST_SKIP() << "SKIPPED: no usable GPU (cuda_exit_paths found no CUDA device); run it on the GPU machine: "
                      "ctest -R robust.gpu (docs/gpu-testing.md)";
    }
    ASSERT_EQ(describe(probe.status), "exit code 3") << probe.err;
  }
  Result bare(const std::string& mode, std::vector<int> when_ready = {}) {
    return run({{kProgram.string(), mode}, {}, dir_ / "bare", false, when_ready});
  }
  Result preloaded(const std::string& mode, std::vector<int> when_ready = {}) {
    const std::string reports = (dir_ / "reports").string();
    return run({{kProgram.string(), mode},
                {"LD_PRELOAD=" + kLibrary.string(),
                 "ASYNCCHECK_OPTIONS=log_file=" + reports + "/report.%p.txt:json=" + reports + "/report.%p.json"},
                dir_ / "preload",
                false,
                when_ready});
  }
  std::map<int, std::string> reports() {
    std::map<int, std::string> json;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "reports")) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(".json"))
        json[std::stoi(name.substr(7))] = slurp(e.path());
      else if (!name.ends_with(".txt"))
        ADD_FAILURE() << "unexpected file " << name;
    }
    return json;
  }
  // Checks the program's own report: monitoring on, how it ended (complete or not, if given), and that it holds
  // the calls made before.
  void expect_report(const Result& p, const std::string& end, std::optional<bool> complete, size_t processes = 1) {
    const std::map<int, std::string> json = reports();
    EXPECT_EQ(json.size(), processes);
    ASSERT_TRUE(json.contains(p.pid)) << p.err;
    const std::string& r = json.at(p.pid);
    EXPECT_NE(r.find("\"monitoring\": \"on\""), std::string::npos) << r;
    EXPECT_NE(r.find("\"end\": \"" + end + "\""), std::string::npos) << r;
    if (complete)
      EXPECT_NE(r.find(std::string("\"complete\": ") + (*complete ? "true" : "false")), std::string::npos) << r;
    EXPECT_EQ(r.find("\"calls_watched\": 0,"), std::string::npos) << "the calls before the end are missing: " << r;
    EXPECT_NE(r.find("\"api\": \"cudaMemcpyAsync\""), std::string::npos) << "the pageable copy is not reported: " << r;
    EXPECT_EQ(p.err.find("was not written"), std::string::npos) << p.err;
  }
};

// SIGTERM while the host waits in cudaStreamSynchronize: the reporter flushes CUPTI while the main thread is
// stopped inside the CUDA call.
TEST_F(CudaExitPaths, SigtermInsideCudaStreamSynchronize) {
  const Result b = bare("sigterm-in-sync", {SIGTERM});
  ASSERT_EQ(describe(b.status), "signal TERM") << b.err;
  const auto t0 = std::chrono::steady_clock::now();
  const Result p = preloaded("sigterm-in-sync", {SIGTERM});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(p.status, b.status) << describe(p.status) << "\n" << p.err;
  EXPECT_LT(seconds, 10.0) << "the report took the whole signal_timeout: stuck?";
  expect_report(p, "signal SIGTERM", false);
}

TEST_F(CudaExitPaths, CrashesAndUnderscoreExitAfterCudaCalls) {
  for (const char* mode : {"segv", "abort", "_exit"}) {
    SCOPED_TRACE(mode);
    empty("reports");
    const Result b = bare(mode);
    const Result p = preloaded(mode);
    EXPECT_EQ(p.status, b.status) << describe(p.status) << " vs " << describe(b.status) << "\n" << p.err;
    const std::string m = mode;
    expect_report(p, m == "_exit" ? "_exit" : m == "segv" ? "signal SIGSEGV" : "signal SIGABRT", false);
    // The fault's place, among the modules the capture listed: the program's own main, a null pointer.
    const std::string own = reports().at(p.pid);
    EXPECT_EQ(own.find("\"fault\": \"at cuda_exit_paths+0x") != std::string::npos, m == "segv") << own;
    if (m == "segv") EXPECT_NE(own.find(", address 0x0\""), std::string::npos) << own;
  }
}

// The program's own race: main's next CUDA call may fail with "driver shutting down" once exit(8) has torn the
// runtime down, and main then calls exit(70) while exit(8) is under way; glibc ends the process with whichever status
// reaches the system first. Bare, it ends with 70 in about 1 run of 40 (docs/robustness.md), so a run that ends
// with 70 saying why is the program's outcome, not ours; every run ending with 70 would be ours.
bool ends_as_the_program_may(const Result& r) {
  const std::string status = describe(r.status);
  return status == "exit code 8" ||
         (status == "exit code 70" && r.err.find(": driver shutting down") != std::string::npos);
}

TEST_F(CudaExitPaths, ExitFromAThreadWhileAnotherMakesCudaCalls) {
  const Result b = bare("thread-exit");
  if (!ends_as_the_program_may(b)) {
    GTEST_SKIP() << "the program itself does not survive exit() racing its CUDA calls here: " << describe(b.status)
                 << "\n"
                 << b.err;
  }
  int exited_8 = 0;
  for (int k = 0; k < 5; ++k) {  // a race: a few times
    SCOPED_TRACE(k);
    empty("reports");
    const Result p = preloaded("thread-exit");
    EXPECT_TRUE(ends_as_the_program_may(p)) << describe(p.status) << "\n" << p.err;
    exited_8 += describe(p.status) == "exit code 8";
    expect_report(p, "exit", std::nullopt);  // complete or not, depending on whether a call was in flight
  }
  EXPECT_GT(exited_8, 0) << "every run ended with the racing caller's status";
}

TEST_F(CudaExitPaths, ForkedChildAfterCudaInitDoesNotReport) {
  const Result p = preloaded("fork-child-exits");
  EXPECT_EQ(describe(p.status), "exit code 0") << p.err;
  expect_report(p, "exit", true);
}

// A child that execs another CUDA program gets the library anew and its own report (per-pid names); the parent's
// report is intact and holds its calls from before the fork and after the child ended.
TEST_F(CudaExitPaths, ForkedChildThatExecsACudaProgramReportsApart) {
  const Result b = bare("fork-exec-cuda");
  ASSERT_EQ(describe(b.status), "exit code 0") << b.err;
  const Result p = preloaded("fork-exec-cuda");
  EXPECT_EQ(describe(p.status), "exit code 0") << p.err;
  EXPECT_EQ(p.out, b.out);
  expect_report(p, "exit", true, 2);
  const std::map<int, std::string> json = reports();
  ASSERT_EQ(json.size(), 2u);
  const auto child = std::find_if(json.begin(), json.end(), [&](const auto& r) { return r.first != p.pid; });
  ASSERT_NE(child, json.end());
  const std::string& c = child->second;
  EXPECT_NE(c.find("\"monitoring\": \"on\""), std::string::npos) << c;
  EXPECT_NE(c.find("\"end\": \"exit\""), std::string::npos) << c;
  EXPECT_NE(c.find("\"complete\": true"), std::string::npos) << c;
  EXPECT_NE(c.find("\"args\": [\"exit\"]"), std::string::npos) << "the exec'd program's own report: " << c;
  EXPECT_NE(c.find("\"api\": \"cudaMemcpyAsync\""), std::string::npos) << c;
  // The parent made the child's calls and a second round after it: more calls than the child.
  EXPECT_GT(json_number(json.at(p.pid), "calls_watched"), json_number(c, "calls_watched")) << json.at(p.pid) << "\n"
                                                                                           << c;
}

// A child that execs a program that never uses CUDA (a helper: /bin/true) writes no report of nothing, whose file
// would sit beside the program's (interpose/lineage.h); the parent's is intact.
TEST_F(CudaExitPaths, ForkedChildThatExecsANonCudaProgramWritesNoReport) {
  const Result p = preloaded("fork-exec-nocuda");
  EXPECT_EQ(describe(p.status), "exit code 0") << p.err;
  expect_report(p, "exit", true, 1);
}

}  // namespace
