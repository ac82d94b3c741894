// A command line without surprises (issue 21), end to end through the built command, no GPU needed: every
// subcommand's --help, on/off options as bare flags, --list-rules=json, reports to standard output, one format's
// extension, a report that could not be written at the end, and a program that cannot be started.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/recording.h"
#include "command.h"
#include "report/json_value.h"
#include "rules/catalog.h"

using namespace asynccheck::testing;

namespace {

// Today's "analyze --help" read a recording named '--help', and "merge --help" wanted a value.
TEST_F(Cli, EverySubcommandHasHelp) {
  const std::string marker = (dir_ / "ran").string();
  const struct {
    std::vector<std::string> args;
    std::string starts;
  } cases[] = {
      {{"--help"}, "usage: asynccheck [options] -- PROGRAM"},
      {{"-h"}, "usage: asynccheck [options] -- PROGRAM"},
      {{"--stats", "--help", "--", "/usr/bin/touch", marker}, "usage: asynccheck [options] -- PROGRAM"},
      {{"analyze", "--help"}, "usage: asynccheck analyze RECORDING [options]"},
      {{"analyze", kRecording.string(), "-h"}, "usage: asynccheck analyze RECORDING [options]"},
      {{"merge", "--help"}, "usage: asynccheck merge [options] REPORT.json..."},
      {{"merge", "r.json", "--help"}, "usage: asynccheck merge [options] REPORT.json..."},
  };
  for (const auto& c : cases) {
    const Result r = asynccheck(c.args);
    EXPECT_EQ(r.code(), 0) << c.args[0] << "\n" << r.err;
    EXPECT_TRUE(r.out.starts_with(c.starts)) << c.args[0] << ": " << r.out.substr(0, 200);
    EXPECT_EQ(r.err, "");
  }
  EXPECT_FALSE(fs::exists(marker)) << "--help ran the program";
  // merge's help lists the options that apply to it, and only those.
  const Result merge = asynccheck({"merge", "--help"});
  EXPECT_NE(merge.out.find("  baseline (Text"), std::string::npos) << merge.out;
  EXPECT_EQ(merge.out.find("  threshold (Duration"), std::string::npos) << merge.out;
}

// On/off options are on when named alone; a flag never takes the next argument (the program, a recording).
TEST_F(Cli, OnOffOptionsAreBareFlags) {
  const fs::path json = dir_ / "r.json";
  std::ofstream(json) << "old";
  Result r = asynccheck({"analyze", kRecording.string(), "--json=" + json.string(), "--overwrite"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_TRUE(slurp(json).starts_with("{")) << "--overwrite did not replace the file";
  r = asynccheck({"analyze", "--overwrite", kRecording.string(), "--json=" + json.string()});
  EXPECT_EQ(r.code(), 0) << r.err;
  r = asynccheck({"--stats", "/bin/sh", "-c", "echo \"$ASYNCCHECK_OPTIONS\""});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_NE((":" + r.out).find(":stats=1:"), std::string::npos) << r.out;
  r = asynccheck({"--stats=0", "--", "/bin/sh", "-c", "echo \"$ASYNCCHECK_OPTIONS\""});
  EXPECT_NE((":" + r.out).find(":stats=0:"), std::string::npos) << r.out;
}

TEST_F(Cli, ListRulesAsJson) {
  const Result r = asynccheck({"--list-rules=json"});
  ASSERT_EQ(r.code(), 0) << r.err;
  asynccheck::report::JsonValue v;
  std::string error;
  ASSERT_TRUE(asynccheck::report::parse_json(r.out, v, error)) << error << "\n" << r.out;
  const auto rules = asynccheck::rules::all_rules();
  ASSERT_EQ(v.size(), rules.size());
  for (size_t i = 0; i < rules.size(); ++i) {
    EXPECT_EQ(v[i]["id"].string(), rules[i].id);
    EXPECT_EQ(v[i]["level"].string(), asynccheck::rules::level_name(rules[i].level));
    EXPECT_EQ(v[i]["title"].string(), rules[i].title);
    EXPECT_EQ(v[i]["url"].string(), rules[i].url);
    EXPECT_EQ(v[i]["fix"].string(), rules[i].fix);
  }
  EXPECT_TRUE(asynccheck({"--list-rules"}).out.starts_with(std::string(rules[0].id) + "\t"));
  const Result bad = asynccheck({"--list-rules=xml"});
  EXPECT_EQ(bad.code(), 2);
  EXPECT_EQ(bad.first_err_line(),
            "asynccheck: ERROR: --list-rules: 'xml' is not a format (valid: text, markdown, json)");
}

// '-' is standard output: the same report as the file, the summary still on stderr; under the run subcommand,
// after the program's own output.
TEST_F(Cli, ReportsToStandardOutput) {
  const fs::path json = dir_ / "r.json", sarif = dir_ / "r.sarif";
  ASSERT_EQ(asynccheck({"analyze", kRecording.string(), "--json=" + json.string(), "--sarif=" + sarif.string()}).code(),
            0);
  Result r = asynccheck({"analyze", kRecording.string(), "--json=-"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_EQ(r.out, slurp(json));
  EXPECT_NE(r.err.find("SUMMARY: "), std::string::npos) << r.err;
  r = asynccheck({"analyze", kRecording.string(), "--format=sarif", "--output=-"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_EQ(r.out, slurp(sarif));
  r = asynccheck({"analyze", kRecording.string(), "--save-baseline=-"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("asynccheck-baseline 1\n")) << r.out;
  EXPECT_FALSE(fs::exists("-"));
  r = asynccheck({"--json=-", "--", "/bin/sh", "-c", "echo out"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("out\n{\n  \"schema\": \"asynccheck-report\"")) << r.out.substr(0, 200);
}

// --source-root (issue 21): a recording made on another machine (its files under /work/main, which need not exist
// here) maps onto the checkout: JSON and the summary name the file relative to the root.
TEST_F(Cli, SourceRootMakesPathsRelativeToTheCheckout) {
  Result r = asynccheck({"analyze", kRecording.string(), "--json=-"});
  ASSERT_EQ(r.code(), 0) << r.err;
  const std::string recorded = "/work/main/samples/seed000_answer/seed000_answer.cu";
  ASSERT_NE(r.out.find("\"file\": \"" + recorded + "\""), std::string::npos) << r.out.substr(0, 2000);
  r = asynccheck({"analyze", kRecording.string(), "--json=-", "--source-root=/work/main"});
  ASSERT_EQ(r.code(), 0) << r.err;
  EXPECT_NE(r.out.find("\"file\": \"samples/seed000_answer/seed000_answer.cu\""), std::string::npos)
      << r.out.substr(0, 2000);
  EXPECT_NE(r.err.find(" at samples/seed000_answer/seed000_answer.cu:"), std::string::npos) << r.err;
}

// --capture-range=cudaProfilerApi (issue 21), offline: a recording without cudaProfilerStart has every call outside
// the range, and the summary says so rather than look like a clean run. A range it does not know is refused.
TEST_F(Cli, ACaptureRangeThatNeverOpenedJudgesNothingAndSaysSo) {
  Result r = asynccheck({"analyze", kRecording.string(), "--capture-range=cudaProfilerApi", "--json=-"});
  ASSERT_EQ(r.code(), 0) << r.err;
  asynccheck::report::JsonValue doc;
  std::string error;
  ASSERT_TRUE(asynccheck::report::parse_json(r.out, doc, error)) << error;
  EXPECT_EQ(doc["run"]["capture_range"].string(), "cudaProfilerApi");
  EXPECT_GT(doc["run"]["calls_watched"].uint64().value_or(0), 0u);
  EXPECT_EQ(doc["run"]["outside_range_calls"].uint64(), doc["run"]["calls_watched"].uint64());
  EXPECT_EQ(doc["sites"].size(), 0u);
  EXPECT_NE(r.err.find("outside the capture range (cudaProfilerApi: not judged), every call: nothing was judged"),
            std::string::npos)
      << r.err;
  r = asynccheck({"analyze", kRecording.string(), "--capture-range=cudaProfilerApi", "--sarif=-"});
  ASSERT_EQ(r.code(), 0) << r.err;
  ASSERT_TRUE(asynccheck::report::parse_json(r.out, doc, error)) << error;
  const asynccheck::report::JsonValue& props = doc["runs"][0]["properties"];
  EXPECT_EQ(props["captureRange"].string(), "cudaProfilerApi");
  EXPECT_EQ(props["callsOutsideCaptureRange"].uint64(), props["callsWatched"].uint64());
  // In CI, with --require-monitoring: a range that never opened checked nothing, and fails the job.
  r = asynccheck({"analyze", kRecording.string(), "--capture-range=cudaProfilerApi", "--require-monitoring"});
  EXPECT_EQ(r.code(), 4);
  EXPECT_NE(r.err.find("no call was made inside the capture range and require_monitoring is set: exit code 4"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(asynccheck({"analyze", kRecording.string(), "--require-monitoring"}).code(), 0);
  r = asynccheck({"analyze", kRecording.string(), "--capture-range=nvtx:"});
  EXPECT_EQ(r.code(), 2);
  EXPECT_NE(r.err.find("option 'capture_range': 'nvtx:' is not a capture range (valid: cudaProfilerApi"),
            std::string::npos)
      << r.err;
  // A range the program never opened: the same as a profiler range that never started.
  r = asynccheck({"analyze", kRecording.string(), "--capture-range=nvtx:step"});
  EXPECT_EQ(r.code(), 0);
  EXPECT_NE(r.err.find("calls outside the capture range (nvtx:step: not judged)"), std::string::npos) << r.err;
}

// The library in the program's process judges, and the command reports its judgements as they are: what they are
// judged with must reach it (--cost-threshold did not, and was ignored). The program prints what it was given.
TEST_F(Cli, TheAnalysisOptionsReachTheProgramsProcess) {
  const Result r = asynccheck({"--cost-threshold=5ms", "--threshold=250us", "--capture-range=cudaProfilerApi", "--",
                               "/bin/sh", "-c", "echo \"$ASYNCCHECK_OPTIONS\""});
  ASSERT_EQ(r.code(), 0) << r.err;
  for (const char* given : {"threshold=250000ns", "cost_threshold=5000000ns", "capture_range=cudaProfilerApi"})
    EXPECT_NE(r.out.find(given), std::string::npos) << given << " not in " << r.out;
}

// With one format, --output gets its extension (it had to be spelled out before).
TEST_F(Cli, OneFormatOutputGetsItsExtension) {
  Result r = asynccheck({"analyze", kRecording.string(), "--format=sarif", "--output=" + (dir_ / "r").string()});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_NE(slurp(dir_ / "r.sarif").find("\"2.1.0\""), std::string::npos);
  r = asynccheck({"analyze", kRecording.string(), "--output=" + (dir_ / "j").string()});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "j.json"));
  EXPECT_FALSE(fs::exists(dir_ / "j"));
}

// A report that could not be written at the end fails the command (analyze exited 0 after its ERROR line).
TEST_F(Cli, AReportNotWrittenAtTheEndIsAFailure) {
  // A path per process (%p) can only be known to be free at the end: here the recording's pid has it already.
  asynccheck::EventLog log;
  std::string error;
  std::ifstream in(kRecording);
  ASSERT_TRUE(asynccheck::read_recording(in, log, error)) << error;
  const fs::path taken = dir_ / ("r." + std::to_string(log.run.pid) + ".json");
  std::ofstream(taken) << "taken";
  Result r = asynccheck({"analyze", kRecording.string(), "--json=" + (dir_ / "r.%p.json").string()});
  EXPECT_EQ(r.code(), 1) << r.err;
  EXPECT_NE(r.err.find("asynccheck: ERROR: cannot write '" + taken.string() + "': it already exists"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(taken), "taken");
  // The run subcommand: the program removes the report's directory; its own exit code 0 becomes 1, another stays.
  const fs::path sub = dir_ / "sub";
  for (const int code : {0, 5}) {
    fs::create_directories(sub);
    r = asynccheck({"--json=" + (sub / "r.json").string(), "--", "/bin/sh", "-c",
                    "rm -rf '" + sub.string() + "'; exit " + std::to_string(code)});
    EXPECT_EQ(r.code(), code == 0 ? 1 : code) << r.err;
    EXPECT_NE(r.err.find("asynccheck: ERROR: cannot write '" + (sub / "r.json").string() + "'"), std::string::npos)
        << r.err;
  }
}

// A program that cannot be started: the shell's codes and words (bash: 127 not found, 126 found but not runnable).
TEST_F(Cli, AProgramThatCannotStartGetsTheShellsCodes) {
  const fs::path script = dir_ / "script.sh";
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  fs::permissions(script, fs::perms::owner_read | fs::perms::owner_write);
  const struct {
    std::string program;
    int code;
    std::string message;
  } cases[] = {
      {"no-such-program-asynccheck", 127,
       "cannot run 'no-such-program-asynccheck': command not found (no such program in any directory of PATH)"},
      {(dir_ / "missing").string(), 127, "cannot run '" + (dir_ / "missing").string() + "': No such file or directory"},
      {dir_.string(), 126, "cannot run '" + dir_.string() + "': Is a directory (valid: an executable file)"},
      {script.string(), 126,
       "cannot run '" + script.string() +
           "': Permission denied (it is not executable by you: chmod +x, or run its interpreter)"},
  };
  for (const auto& c : cases) {
    const Result r = asynccheck({"--", c.program});
    EXPECT_EQ(r.code(), c.code) << c.program << "\n" << r.err;
    EXPECT_EQ(r.first_err_line(), "asynccheck: ERROR: " + c.message);
    EXPECT_EQ(r.out, "");
  }
  // Found in PATH, the program runs as the shell would run it.
  const Result r = asynccheck({"--", "sh", "-c", "exit 7"});
  EXPECT_EQ(r.code(), 7) << r.err;
}

}  // namespace
