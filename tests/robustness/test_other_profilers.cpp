// Other CUPTI clients in the same process (GPU machine, label gpu): CUDA 13.0's CUPTI serves one subscriber. Under
// compute-sanitizer, which takes CUPTI first, asynccheck says so in one line and the program and the sanitizer
// behave as without it; the helper processes the sanitizer starts write no report (interpose/lineage.h). Under
// asynccheck, a program that starts torch.profiler runs to its end with its own exit code and a profile that
// lacks the GPU's events, which Kineto says itself; asynccheck reports as usual. Each test skips itself, saying
// why, without a GPU, compute-sanitizer or PyTorch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <regex>

#include "launch.h"
#include "test_dir.h"

namespace {

using namespace asynccheck_test;

const fs::path kProgram = ASYNCCHECK_CUDA_EXIT_PATHS;
const fs::path kLibrary = ASYNCCHECK_LIBRARY;
const fs::path kCommand = ASYNCCHECK_COMMAND;
const fs::path kTorchScript = ASYNCCHECK_TORCH_PROFILE;
const std::string kHeld = "CUPTI is already in use by";

class OtherProfilers : public TestDir {
 protected:
  void SetUp() override { make_dir("asynccheck-profilers", {"bare", "watched", "reports"}); }
  std::vector<std::string> reports() const {
    std::vector<std::string> out;
    for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "reports")) out.push_back(slurp(e.path()));
    return out;
  }
  std::string json_option() const { return (dir_ / "reports" / "r.%p.json").string(); }
};

fs::path compute_sanitizer() {
  for (const char* p :
       {"/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer"}) {
    if (fs::exists(p)) return p;
  }
  return {};
}

// The sanitizer's own lines, without the ones that name a process id ("========= Process ID ..."): those differ.
std::string sanitizer_lines(const std::string& out) {
  return std::regex_replace(out, std::regex("[^\n]*[Pp]rocess[^\n]*\n"), "");
}

TEST_F(OtherProfilers, UnderComputeSanitizerAsynccheckStepsAside) {
  const Result probe = run({{kProgram.string(), "exit"}, {}, dir_ / "bare"});
  if (describe(probe.status) == "exit code 77") GTEST_SKIP() << "SKIPPED: no usable GPU (cuda_exit_paths found none)";
  const fs::path sanitizer = compute_sanitizer();
  if (sanitizer.empty()) GTEST_SKIP() << "SKIPPED: compute-sanitizer not found under /usr/local/cuda";
  const std::vector<std::string> argv{sanitizer.string(), "--tool", "memcheck", kProgram.string(), "exit"};
  const Result bare = run({argv, {}, dir_ / "bare"});
  ASSERT_EQ(describe(bare.status), "exit code 3") << bare.out << bare.err;
  ASSERT_NE(bare.out.find("ERROR SUMMARY: 0 errors"), std::string::npos) << bare.out;

  // Both ways people combine them: the library preloaded around the sanitizer, or the sanitizer running the command.
  struct Way {
    const char* name;
    Launch launch;
    size_t reports;  // the program's, and with LD_PRELOAD the first process's (the sanitizer's own launcher)
  };
  std::vector<std::string> through_command{sanitizer.string(),        "--tool", "memcheck",        kCommand.string(),
                                           "--json=" + json_option(), "--",     kProgram.string(), "exit"};
  const Way ways[] = {
      {"LD_PRELOAD=libasynccheck.so compute-sanitizer ...",
       {argv, {"LD_PRELOAD=" + kLibrary.string(), "ASYNCCHECK_OPTIONS=json=" + json_option()}, dir_ / "watched"},
       2},
      {"compute-sanitizer asynccheck -- ...", {through_command, {}, dir_ / "watched"}, 1},
  };
  for (const Way& way : ways) {
    SCOPED_TRACE(way.name);
    empty("reports");
    const Result w = run(way.launch);
    EXPECT_EQ(w.status, bare.status) << describe(w.status) << "\n" << w.err;
    EXPECT_EQ(sanitizer_lines(w.out), sanitizer_lines(bare.out));
    // One line saying so (issue 22): at the start from the first process, or in the report at exit from the
    // program when the start was a helper's (the sanitizer's child) or the command reports for it.
    EXPECT_EQ(
        count(w.err, "asynccheck: monitoring off: " + kHeld) + count(w.err, "asynccheck: monitoring was off: " + kHeld),
        1u)
        << w.err;
    const std::vector<std::string> json = reports();
    EXPECT_EQ(json.size(), way.reports) << "the sanitizer's helper processes (no CUDA) must write no report";
    size_t program = 0;
    for (const std::string& r : json) {
      if (r.find("\"program\": \"" + kProgram.string() + "\"") == std::string::npos) {
        EXPECT_NE(r.find("\"calls_watched\": 0,"), std::string::npos) << r;  // the launcher: nothing of CUDA
        continue;
      }
      ++program;
      EXPECT_NE(r.find("\"monitoring\": \"off: " + kHeld), std::string::npos) << r;
    }
    EXPECT_EQ(program, 1u) << "the program's own report says why nothing was watched";
  }
}

TEST_F(OtherProfilers, TorchProfilerUnderAsynccheckRunsToItsEnd) {
  const Result probe = run({{kProgram.string(), "exit"}, {}, dir_ / "bare"});
  if (describe(probe.status) == "exit code 77") GTEST_SKIP() << "SKIPPED: no usable GPU (cuda_exit_paths found none)";
  const Result bare = run({{"/usr/bin/env", "python3", kTorchScript.string()}, {}, dir_ / "bare"});
  if (describe(bare.status) == "exit code 77") GTEST_SKIP() << "SKIPPED: " << bare.out;
  ASSERT_EQ(describe(bare.status), "exit code 0") << bare.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(bare.out, m, std::regex("cuda_events ([0-9]+)"))) << bare.out;
  EXPECT_GT(std::stoi(m[1]), 0) << "torch.profiler alone records the GPU's work";

  const Result w =
      run({{kCommand.string(), "--json=" + json_option(), "--", "python3", kTorchScript.string()},  // execvp
           {},
           dir_ / "watched"});
  EXPECT_EQ(describe(w.status), "exit code 0") << w.err;
  EXPECT_NE(w.out.find("cpu_events True\n"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("cuda_events 0\n"), std::string::npos)
      << "CUDA 13.0's CUPTI serves one subscriber: if the profile now has GPU events, update docs/robustness.md\n"
      << w.out;
  EXPECT_NE(w.out.find("done\n"), std::string::npos) << w.out;
  EXPECT_NE(w.err.find("MULTIPLE_SUBSCRIBERS"), std::string::npos) << "Kineto says why itself: " << w.err;
  const std::vector<std::string> json = reports();
  ASSERT_EQ(json.size(), 1u) << w.err;
  EXPECT_NE(json[0].find("\"monitoring\": \"on\""), std::string::npos) << json[0];
  EXPECT_EQ(json[0].find("\"calls_watched\": 0,"), std::string::npos) << json[0];
}

}  // namespace
