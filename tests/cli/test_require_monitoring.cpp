// CI safety (issue 21): a run whose monitoring could not start checked nothing, and must not pass for a clean one.
// With --require-monitoring (require_monitoring=1 in ASYNCCHECK_OPTIONS) it exits with code 4; its SARIF says
// executionSuccessful false, option or not. This machine has no GPU: asynccheck fails open here, which is the case
// under test. Without the option the program's own exit code is kept, as always.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "command.h"
#include "report/json_value.h"

using namespace asynccheck::testing;

namespace {

const std::string kRequiredLine =
    "asynccheck: ERROR: monitoring was off and require_monitoring is set: exit code 4 (nothing was checked)";

// A program's output without its timing lines ("Elapsed: ..."), which differ from run to run.
std::string untimed(const std::string& out) {
  std::string kept;
  size_t at = 0;
  while (at < out.size()) {
    const size_t end = std::min(out.find('\n', at), out.size());
    const std::string line = out.substr(at, end - at);
    if (!line.starts_with("Elapsed: ")) kept += line + "\n";
    at = end + 1;
  }
  return kept;
}

// Skips where a GPU is there: monitoring would start.
bool monitoring_starts() { return fs::exists("/proc/driver/nvidia/version") || fs::exists("/dev/dxg"); }

TEST_F(Cli, RequireMonitoringFailsTheCommandWhenMonitoringIsOff) {
  if (monitoring_starts()) GTEST_SKIP() << "a GPU is here: monitoring starts";
  for (const int code : {0, 3}) {
    const std::string program = "echo out; exit " + std::to_string(code);
    Result r = asynccheck({"--", "/bin/sh", "-c", program});
    EXPECT_EQ(r.code(), code) << r.err;  // the program's own code without the option
    EXPECT_EQ(r.err.find(kRequiredLine), std::string::npos) << r.err;
    r = asynccheck({"--require-monitoring", "--", "/bin/sh", "-c", program});
    EXPECT_EQ(r.code(), 4) << r.err;
    EXPECT_EQ(r.out, "out\n");  // the program itself ran unchanged
    EXPECT_NE(r.err.find("asynccheck: monitoring was off: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(kRequiredLine), std::string::npos) << r.err;
  }
}

// The case CI meets: a CUDA program on a runner without a usable GPU. It runs as it would without asynccheck (here
// its CUDA calls fail, and it exits with its own code), and the command says the check did not happen.
TEST_F(Cli, RequireMonitoringWithACudaProgram) {
#ifndef ASYNCCHECK_CUDA_SAMPLE
  GTEST_SKIP() << "the CUDA samples are not built";
#else
  if (monitoring_starts()) GTEST_SKIP() << "a GPU is here: monitoring starts";
  const std::vector<std::string> sample = {ASYNCCHECK_CUDA_SAMPLE, "pageable", "1024"};
  const Result bare = run(sample);
  std::vector<std::string> args = {"--"};
  args.insert(args.end(), sample.begin(), sample.end());
  Result r = asynccheck(args);
  EXPECT_EQ(r.status, bare.status) << r.err;
  EXPECT_EQ(untimed(r.out), untimed(bare.out));
  args.insert(args.begin(), "--require-monitoring");
  r = asynccheck(args);
  EXPECT_EQ(r.code(), 4) << r.err;
  EXPECT_EQ(untimed(r.out), untimed(bare.out));
  EXPECT_NE(r.err.find(kRequiredLine), std::string::npos) << r.err;
#endif
}

// Whether `program` is a static executable (no PT_INTERP): LD_PRELOAD never loads the library into it.
bool is_static(const fs::path& program) {
  std::ifstream in(program, std::ios::binary);
  Elf64_Ehdr eh{};
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64) {
    return false;
  }
  for (int k = 0; k < eh.e_phnum; ++k) {
    Elf64_Phdr ph{};
    in.seekg(static_cast<std::streamoff>(eh.e_phoff + static_cast<uint64_t>(k) * eh.e_phentsize));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph)) return false;
    if (ph.p_type == PT_INTERP) return false;
  }
  return true;
}

// A static program never loads the library: no process reported, and the requirement says so.
TEST_F(Cli, RequireMonitoringWhenNoProcessCouldBeMonitored) {
  const fs::path ldconfig = "/sbin/ldconfig";  // static on Debian and Ubuntu
  if (!fs::exists(ldconfig) || !is_static(ldconfig)) GTEST_SKIP() << "no static program at " << ldconfig;
  Result r = asynccheck({"--", ldconfig.string(), "--version"});
  EXPECT_EQ(r.code(), 0) << r.err;
  r = asynccheck({"--require-monitoring", "--", ldconfig.string(), "--version"});
  EXPECT_EQ(r.code(), 4) << r.err;
  EXPECT_EQ(r.first_err_line(),
            "asynccheck: ERROR: no process of the program was monitored (the library was not loaded: a statically "
            "linked program, or a setuid one); exit code 4 (--require-monitoring)");
}

TEST_F(Cli, SarifOfARunWithoutMonitoringIsNotSuccessful) {
  const fs::path for_schema = fs::path(ASYNCCHECK_BINARY_DIR) / "monitoring_off.sarif";
  fs::remove(for_schema);  // where a GPU is, none: the schema check skips itself
  if (monitoring_starts()) GTEST_SKIP() << "a GPU is here: monitoring starts";
  const fs::path sarif = dir_ / "r.sarif";
  const Result r = asynccheck({"--sarif=" + sarif.string(), "--", "/bin/true"});
  ASSERT_EQ(r.code(), 0) << r.err;
  asynccheck::report::JsonValue v;
  std::string error;
  ASSERT_TRUE(asynccheck::report::parse_json(slurp(sarif), v, error)) << error;
  const auto& inv = v["runs"][0]["invocations"][0];
  EXPECT_TRUE(inv["executionSuccessful"].is_bool());
  EXPECT_FALSE(inv["executionSuccessful"].boolean());
  EXPECT_EQ(inv["toolExecutionNotifications"][0]["level"].string(), "error");
  EXPECT_TRUE(inv["toolExecutionNotifications"][0]["message"]["text"].string().starts_with("monitoring was off: "));
  // For the schema check (tests/cli/CMakeLists.txt: cli.monitoring_off_sarif_schema).
  fs::copy_file(sarif, for_schema, fs::copy_options::overwrite_existing);
}

// Raw LD_PRELOAD use: the library ends the process with code 4 once its report is written and the program's own
// output flushed (every way a program ends: tests/robustness/test_exit_paths.cpp). awk closes its stdout and stderr
// itself before the exit handlers run, so the library's line does not reach them; python's os._exit shows it.
TEST_F(Cli, RequireMonitoringInAsynccheckOptions) {
  if (monitoring_starts()) GTEST_SKIP() << "a GPU is here: monitoring starts";
  const std::string preload = "LD_PRELOAD=" + kLibrary.string();
  const std::vector<std::string> awk = {"/usr/bin/awk", "BEGIN { printf \"hi\\n\"; exit 3 }"};
  Result r = run(awk, {preload});
  EXPECT_EQ(r.code(), 3) << r.err;
  EXPECT_EQ(r.out, "hi\n");
  r = run(awk, {preload, "ASYNCCHECK_OPTIONS=require_monitoring=1"});
  EXPECT_EQ(r.code(), 4) << r.err;
  EXPECT_EQ(r.out, "hi\n");
  // A typo elsewhere in the options turns monitoring off; it must not turn the requirement off with it.
  r = run(awk, {preload, "ASYNCCHECK_OPTIONS=bogus=1:require_monitoring"});
  EXPECT_EQ(r.code(), 4) << r.err;
  EXPECT_EQ(r.out, "hi\n");
  // The ends that skip exit handlers: _exit (through the library's shim).
  r = run({"/usr/bin/python3", "-c", "import os, sys; sys.stdout.write('py\\n'); sys.stdout.flush(); os._exit(0)"},
          {preload, "ASYNCCHECK_OPTIONS=require_monitoring=1"});
  EXPECT_EQ(r.code(), 4) << r.err;
  EXPECT_EQ(r.out, "py\n");
  EXPECT_NE(r.err.find(kRequiredLine), std::string::npos) << r.err;
  // error_exitcode and fail_on are read from ASYNCCHECK_OPTIONS too; without findings the program's code stays.
  r = run(awk, {preload, "ASYNCCHECK_OPTIONS=error_exitcode=9:fail_on=note"});
  EXPECT_EQ(r.code(), 3) << r.err;
  EXPECT_EQ(r.err.find("asynccheck: ERROR"), std::string::npos) << r.err;
}

// analyze and merge of a run whose monitoring was off: the same code.
TEST_F(Cli, RequireMonitoringInAnalyzeAndMerge) {
  std::string text = slurp(kRecording);
  const size_t at = text.find(" monitoring=on ");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, " monitoring=off%3A%20no%20GPU ");
  const fs::path rec = dir_ / "off.rec", json = dir_ / "off.json";
  std::ofstream(rec) << text;
  Result r = asynccheck({"analyze", rec.string(), "--json=" + json.string()});
  ASSERT_EQ(r.code(), 0) << r.err;
  r = asynccheck({"analyze", rec.string(), "--require-monitoring"});
  EXPECT_EQ(r.code(), 4) << r.err;
  EXPECT_NE(r.err.find(kRequiredLine), std::string::npos) << r.err;
  EXPECT_EQ(asynccheck({"analyze", kRecording.string(), "--require-monitoring"}).code(), 0);
  r = asynccheck({"merge", json.string(), "--require-monitoring"});
  EXPECT_EQ(r.code(), 4) << r.err;
  EXPECT_EQ(asynccheck({"merge", json.string()}).code(), 0);
}

}  // namespace

namespace {

// A run whose monitoring stopped before the end (analysis/monitoring.h): its findings from before are kept and
// reported, and it fails CI under --require-monitoring all the same (the rest of the run was not checked).
TEST_F(Cli, MonitoringThatStoppedKeepsItsFindingsAndFailsRequireMonitoring) {
  std::string text = slurp(kRecording);
  const size_t at = text.find(" monitoring=on ");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, " monitoring=stopped%3A%20CUPTI%20finalized ");
  const fs::path rec = dir_ / "stopped.rec", json = dir_ / "stopped.json", sarif = dir_ / "stopped.sarif";
  std::ofstream(rec) << text;
  Result r = asynccheck({"analyze", rec.string(), "--json=" + json.string(), "--sarif=" + sarif.string()});
  ASSERT_EQ(r.code(), 0) << r.err;
  EXPECT_NE(r.err.find("asynccheck: monitoring stopped: CUPTI finalized; what the program did after that was not "
                       "watched (the findings below are from before)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[copy-async-pageable-h2d]"), std::string::npos) << "the findings are kept: " << r.err;
  EXPECT_NE(slurp(json).find("\"monitoring\": \"stopped: CUPTI finalized\""), std::string::npos);
  asynccheck::report::JsonValue v;
  std::string error;
  ASSERT_TRUE(asynccheck::report::parse_json(slurp(sarif), v, error)) << error;
  const auto& run = v["runs"][0];
  EXPECT_FALSE(run["invocations"][0]["executionSuccessful"].boolean());
  EXPECT_EQ(run["invocations"][0]["toolExecutionNotifications"][0]["level"].string(), "error");
  EXPECT_EQ(run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"].string(),
            "monitoring stopped: CUPTI finalized; what the program did after that was not watched (the results "
            "before it are kept)");
  EXPECT_GT(run["results"].size(), 0u);
  fs::copy_file(sarif, fs::path(ASYNCCHECK_BINARY_DIR) / "monitoring_stopped.sarif",
                fs::copy_options::overwrite_existing);  // for the schema check (tests/cli/CMakeLists.txt)

  const std::string stopped_line =
      "asynccheck: ERROR: monitoring stopped before the program ended and require_monitoring is set: exit code 4";
  r = asynccheck({"analyze", rec.string(), "--require-monitoring"});
  EXPECT_EQ(r.code(), 4) << r.err;
  EXPECT_NE(r.err.find(stopped_line), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(kRequiredLine), std::string::npos) << "not 'off': " << r.err;
  // Read back from its JSON report by merge: the same state, the same code.
  r = asynccheck({"merge", json.string(), "--require-monitoring"});
  EXPECT_EQ(r.code(), 4) << r.err;
  EXPECT_NE(r.err.find(stopped_line), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("monitoring stopped before the end in 1 of 1 process"), std::string::npos) << r.err;
  EXPECT_EQ(asynccheck({"merge", json.string()}).code(), 0);
}

// A state that is none of on, off: WHY, stopped: WHY is refused, in a recording and in a report.
TEST_F(Cli, AnUnknownMonitoringStateIsRefused) {
  std::string text = slurp(kRecording);
  const size_t at = text.find(" monitoring=on ");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 15, " monitoring=paused ");
  const fs::path rec = dir_ / "paused.rec";
  std::ofstream(rec) << text;
  Result r = asynccheck({"analyze", rec.string()});
  EXPECT_EQ(r.code(), 2) << r.err;
  EXPECT_NE(r.err.find("field 'monitoring': 'paused' is not a monitoring state (valid: on, off: WHY, stopped: WHY)"),
            std::string::npos)
      << r.err;
  const fs::path json = dir_ / "on.json", bad = dir_ / "paused.json";
  ASSERT_EQ(asynccheck({"analyze", kRecording.string(), "--json=" + json.string()}).code(), 0);
  std::string report = slurp(json);
  const size_t m = report.find("\"monitoring\": \"on\"");
  ASSERT_NE(m, std::string::npos);
  report.replace(m, 18, "\"monitoring\": \"stopped: \"");
  std::ofstream(bad) << report;
  r = asynccheck({"merge", bad.string()});
  EXPECT_EQ(r.code(), 2) << r.err;
  EXPECT_NE(r.err.find("run.monitoring: 'stopped: ' is not a monitoring state"), std::string::npos) << r.err;
}

}  // namespace
