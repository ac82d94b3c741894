// The asynccheck command end to end, without a GPU: bad input stops it before the program starts (exit 2, one
// precise line), the program's output and exit status pass through unchanged, and offline analysis honours
// --error-exitcode, baselines, suppressions and the output options.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/feed.h"
#include "analysis/streaming.h"
#include "report/recording_stream.h"
#include "analysis/recording.h"
#include "command.h"

using namespace asynccheck::testing;

namespace {

// The options the command names as valid: the table's, dashed, then its own --read.
const std::string kValidOptions =
    "threshold, cost-threshold, capture-range, site-threshold, format, output, json, sarif, trace, html, log-file, "
    "save, "
    "handoff, "
    "suppressions, source-root, baseline, save-baseline, error-exitcode, fail-on, require-monitoring, overwrite, "
    "compact, "
    "compact-round, compact-backlog, event-cache-kb, flush-period, stats, print-limit, summary, symbolize, "
    "activity-buffer-kb, "
    "device-buffers, device-buffer-kb, signal-timeout, help, library-frames, read";

// Bad input: exit 2 before the program starts, with a message naming the problem and what is valid.
TEST_F(Cli, BadInputStopsBeforeTheProgramRuns) {
  const std::string marker = (dir_ / "ran").string();
  std::ofstream(dir_ / "exists.json") << "{}";
  std::ofstream(dir_ / "bad.supp") << "not-a-rule:foo\n";
  std::ofstream(dir_ / "bad.baseline") << "something else\n";
  fs::create_symlink(dir_ / "target", dir_ / "link.json");
  const struct {
    std::vector<std::string> options;
    std::string message;
  } cases[] = {
      {{"--bogus=1"}, "unknown option '--bogus' (valid: " + kValidOptions + ")"},
      // Unknown before it needs a value (issue 21: "needs a value"), with the nearest valid name when one is near.
      {{"--bogus"}, "unknown option '--bogus' (valid: " + kValidOptions + ")"},
      {{"--overwrit"}, "unknown option '--overwrit'; did you mean '--overwrite'? (valid: " + kValidOptions + ")"},
      {{"--print_limt=3"},
       "unknown option '--print_limt'; did you mean '--print-limit'? (valid: " + kValidOptions + ")"},
      {{"--threshold=soon"},
       "option 'threshold': 'soon' is not a duration (valid: a whole number with ns, us, ms or "
       "s, e.g. 100us, 2ms; no unit means us)"},
      {{"--print-limit"}, "option '--print-limit' needs a value (--print-limit=VALUE)"},
      {{"--stats=maybe"}, "option 'stats': 'maybe' is not a boolean (valid: 1, 0, true, false, yes, no)"},
      {{"--format=sarif"}, "option 'format': 'sarif' needs an output path (--output=PATH)"},
      {{"--format=xml", "--output=x"},
       "option 'format': 'xml' is not a format (valid: json, sarif, trace, html; comma-separated)"},
      {{"--error-exitcode=256"}, "option 'error_exitcode': '256' is not an exit code (valid: 0 to 255)"},
      {{"--fail-on=fatal"}, "option 'fail_on': 'fatal' is not a level (valid: note, warning, error)"},
      {{"--json=" + (dir_ / "missing/r.json").string()},
       "option 'json': cannot write '" + (dir_ / "missing/r.json").string() + "': directory '" +
           (dir_ / "missing").string() + "' does not exist"},
      {{"--sarif=" + (dir_ / "exists.json").string()},
       "option 'sarif': cannot write '" + (dir_ / "exists.json").string() +
           "': it already exists (valid: a new path, overwrite=1 to replace it, or %p or %r in the name for one file "
           "per process or rank)"},
      {{"--trace=" + (dir_ / "link.json").string(), "--overwrite=1"},
       "option 'trace': cannot write '" + (dir_ / "link.json").string() +
           "': it is a symbolic link (asynccheck never writes through links)"},
      // Everything about an output path that can be known before the program runs (issue 21).
      {{"--json=" + dir_.string()},
       "option 'json': cannot write '" + dir_.string() +
           "': it is a directory, not a regular file (asynccheck only replaces files)"},
      {{"--sarif=" + dir_.string() + "/"},
       "option 'sarif': cannot write '" + dir_.string() + "/': it names a directory (valid: a file name, e.g. '" +
           dir_.string() + "/report')"},
      {{"--json=" + (dir_ / std::string(250, 'r')).string()},
       "option 'json': cannot write '" + (dir_ / std::string(250, 'r')).string() +
           "': its file name is 250 bytes long (valid: at most 240, the file system's 255 less room for the temporary "
           "name it is written under)"},
      {{"--json=" + (dir_ / "exists.json" / "r.json").string()},
       "option 'json': cannot write '" + (dir_ / "exists.json" / "r.json").string() + "': '" +
           (dir_ / "exists.json").string() + "' is a file, not a directory"},
      {{"--json=" + (dir_ / "same").string(), "--save-baseline=" + (dir_ / "same").string()},
       "option 'save_baseline': '" + (dir_ / "same").string() +
           "' is also the path of option 'json' (valid: a file of its own for each report)"},
      {{"--json=-", "--sarif=-"},
       "the json and sarif reports are both given '-' (standard output), which holds one (valid: a file for the "
       "other)"},
      {{"--suppressions=" + (dir_ / "none.supp").string()},
       "cannot read suppression file '" + (dir_ / "none.supp").string() + "': No such file or directory"},
      {{"--baseline=" + (dir_ / "none.baseline").string()},
       "cannot read baseline file '" + (dir_ / "none.baseline").string() + "': No such file or directory"},
      {{}, "no program to run (usage: asynccheck [options] -- PROGRAM [ARGS...])"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.options;
    if (!c.message.starts_with("no program")) {
      for (const char* a : {"--", "/usr/bin/touch"}) args.push_back(a);
      args.push_back(marker);
    }
    const Result r = asynccheck(args);
    EXPECT_EQ(r.code(), 2) << c.message << "\n" << r.err;
    EXPECT_EQ(r.first_err_line(), "asynccheck: ERROR: " + c.message);
    EXPECT_FALSE(fs::exists(marker)) << "the program ran despite: " << c.message;
  }
  // The content of a bad file is named with its line (the exact wording is pinned in the report tests).
  for (const std::string& file : {"bad.supp", "bad.baseline"}) {
    const std::string opt = file == "bad.supp" ? "--suppressions=" : "--baseline=";
    const Result r = asynccheck({opt + (dir_ / file).string(), "--", "/usr/bin/touch", marker});
    EXPECT_EQ(r.code(), 2);
    EXPECT_TRUE(r.first_err_line().starts_with("asynccheck: ERROR: " + (dir_ / file).string() + ":1: ")) << r.err;
    EXPECT_FALSE(fs::exists(marker));
  }
}

// The version is CMake's project version, in --version and in the SARIF driver alike (one configured header).
TEST_F(Cli, VersionIsTheProjectVersion) {
  Result r = asynccheck({"--version"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_EQ(r.out, "asynccheck " ASYNCCHECK_PROJECT_VERSION "\n");
  EXPECT_EQ(r.err, "");
  const fs::path sarif = dir_ / "r.sarif";
  r = asynccheck({"analyze", kRecording.string(), "--sarif=" + sarif.string()});
  ASSERT_EQ(r.code(), 0) << r.err;
  const std::string text = slurp(sarif);
  EXPECT_NE(text.find("\"version\": \"" ASYNCCHECK_PROJECT_VERSION "\""), std::string::npos) << text.substr(0, 400);
  EXPECT_NE(text.find("\"semanticVersion\": \"" ASYNCCHECK_PROJECT_VERSION "\""), std::string::npos);
}

TEST_F(Cli, AnalyzeBadInput) {
  std::ofstream(dir_ / "junk.rec") << "hello\n";
  Result r = asynccheck({"analyze", (dir_ / "none.rec").string()});
  EXPECT_EQ(r.code(), 2);
  EXPECT_EQ(r.first_err_line(), "asynccheck: ERROR: cannot read recording '" + (dir_ / "none.rec").string() +
                                    "': No such file or directory");
  r = asynccheck({"analyze", (dir_ / "junk.rec").string()});
  EXPECT_EQ(r.code(), 2);
  EXPECT_TRUE(r.first_err_line().starts_with("asynccheck: ERROR: recording '" + (dir_ / "junk.rec").string() + "': "))
      << r.err;
  r = asynccheck({"--read=" + kRecording.string(), "--", "/bin/true"});
  EXPECT_EQ(r.code(), 2);
  EXPECT_EQ(r.first_err_line(),
            "asynccheck: ERROR: --read analyzes a recording: no program may follow it (got '/bin/true')");
  r = asynccheck({"analyze"});
  EXPECT_EQ(r.code(), 2);
}

// Text from a recording or a program reaches the terminal escaped: a crafted function name changed the terminal's
// title and printed a fake "#9 error" line of its own (issue 22).
TEST_F(Cli, NamesFromARecordingCannotDriveTheTerminal) {
  std::string text = slurp(kRecording);
  size_t at = 0, crafted = 0;
  while ((at = text.find("\nsym ", at)) != std::string::npos) {
    // sym <ip> <line> <function> <file>: the function is the fourth field.
    size_t field = at + 1;
    for (int k = 0; k < 3; ++k) field = text.find(' ', field) + 1;
    text.insert(field, "%1B]0;pwned%07%0A#9%20error%20");
    ++crafted;
    at = field;
  }
  ASSERT_GT(crafted, 0u);
  const fs::path rec = dir_ / "crafted.rec";
  std::ofstream(rec) << text;
  const Result r = asynccheck({"analyze", rec.string()});
  ASSERT_EQ(r.code(), 0) << r.err;
  EXPECT_NE(r.err.find("\\x1b]0;pwned\\x07\\x0a#9 error"), std::string::npos) << r.err;  // shown, escaped
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.err.find('\x07'), std::string::npos);
  EXPECT_EQ(r.err.find("\n#9 error"), std::string::npos) << r.err;
}

// Inputs that are not regular files are refused before they are read (a FIFO blocked the reader forever, /dev/zero
// grew it to gigabytes), and an output that exists is replaced only when it is a regular file, overwrite=1 or not
// (as root, /dev/null would have become a file) (issue 22).
TEST_F(Cli, OnlyRegularFilesAreReadOrReplaced) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Result r = asynccheck({"analyze", fifo.string()});
  EXPECT_EQ(r.code(), 2);
  EXPECT_EQ(r.first_err_line(),
            "asynccheck: ERROR: cannot read recording '" + fifo.string() + "': it is a FIFO (valid: a regular file)");
  r = asynccheck({"analyze", "/dev/zero"});
  EXPECT_EQ(r.code(), 2);
  EXPECT_EQ(r.first_err_line(),
            "asynccheck: ERROR: cannot read recording '/dev/zero': it is a character device (valid: a regular file)");
  r = asynccheck({"merge", fifo.string()});
  EXPECT_NE(r.code(), 0);
  EXPECT_NE(r.err.find("it is a FIFO (valid: a regular file)"), std::string::npos) << r.err;
  r = asynccheck({"analyze", kRecording.string(), "--json=" + fifo.string(), "--overwrite=1"});
  EXPECT_EQ(r.code(), 2);
  EXPECT_EQ(r.first_err_line(), "asynccheck: ERROR: option 'json': cannot write '" + fifo.string() +
                                    "': it is a FIFO, not a regular file (asynccheck only replaces files)");
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
}

// A run analyzed as it went (the command's default) saves a recording that reports the same at its threshold;
// another threshold, or a trace, needs every event and is refused with the way out.
TEST_F(Cli, CompactedRecordingsAnalyzeAtTheirThresholdOnly) {
  asynccheck::EventLog log;
  std::string error;
  std::ifstream in(kRecording);
  ASSERT_TRUE(asynccheck::read_recording(in, log, error)) << error;
  uint64_t end = 0;
  for (const auto& c : log.calls) end = std::max(end, c.end_ns);
  asynccheck::StreamingOptions o;
  o.analysis.threshold_ns = log.run.threshold_ns;
  o.analysis.cost_threshold_ns = log.run.cost_threshold_ns;
  o.margin_ns = 1'000'000;
  asynccheck::StreamingAnalysis streaming(o, log.run.env);
  streaming.set_marks(log.marks);
  streaming.add(log.calls, log.ops);
  streaming.advance(end / 2);
  asynccheck::EventLog judged = streaming.finish().log;
  asynccheck::copy_run_and_tables(log, judged);  // the marks too: the same the analysis was given
  ASSERT_LT(judged.calls.size(), log.calls.size());
  const fs::path compacted = dir_ / "compacted.rec";
  std::ofstream(compacted) << [&] {
    std::ostringstream s;
    asynccheck::write_recording(s, judged);
    return s.str();
  }();
  Result full = asynccheck({"analyze", kRecording.string(), "--json=" + (dir_ / "full.json").string()});
  Result small = asynccheck({"analyze", compacted.string(), "--json=" + (dir_ / "small.json").string()});
  ASSERT_EQ(full.code(), 0) << full.err;
  ASSERT_EQ(small.code(), 0) << small.err;
  EXPECT_EQ(slurp(dir_ / "small.json"), slurp(dir_ / "full.json"));
  EXPECT_EQ(small.err, full.err);  // the summary

  Result r = asynccheck({"analyze", compacted.string(), "--threshold=50us"});
  EXPECT_EQ(r.code(), 2);
  EXPECT_EQ(r.first_err_line(),
            "asynccheck: ERROR: recording '" + compacted.string() +
                "' was analyzed as it was captured, for threshold=" + std::to_string(log.run.threshold_ns) +
                "ns; it can only be analyzed at that threshold (record with --compact=0 to analyze at another)");
  r = asynccheck({"analyze", compacted.string(), "--threshold=" + std::to_string(log.run.threshold_ns) + "ns"});
  EXPECT_EQ(r.code(), 0) << r.err;
  r = asynccheck({"analyze", compacted.string(), "--trace=" + (dir_ / "t.json").string()});
  EXPECT_EQ(r.code(), 2);
  EXPECT_TRUE(r.first_err_line().find("lacks the events a trace draws (record with --compact=0") != std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "t.json"));
  // The full recording draws its trace at any threshold.
  r = asynccheck({"analyze", kRecording.string(), "--threshold=50us", "--trace=" + (dir_ / "t.json").string()});
  EXPECT_EQ(r.code(), 0) << r.err;
}

// A recording saved while the run's analysis streamed (`save` in a live run: its `step` lines) is analyzed as it
// is read, in the run's own steps, never held whole: the same report as the whole run's (here the sites are few
// enough that no median is sketched), at the run's threshold and at another, and its trace drawn as live.
TEST_F(Cli, ARecordingSavedAsTheRunWentIsAnalyzedInItsSteps) {
  asynccheck::EventLog log;
  std::string error, warning;
  std::ifstream in(kRecording);
  ASSERT_TRUE(asynccheck::read_recording(in, log, error)) << error;
  const fs::path live = dir_ / "live.rec";
  {
    asynccheck::report::RecordingStream stream;
    ASSERT_TRUE(stream.open(
        live.string(), true, log.run, log.api_names,
        [&](size_t stacks_from, size_t, std::vector<asynccheck::Stack>& stacks, std::vector<asynccheck::NvtxRange>&) {
          stacks.assign(log.stacks.begin() + static_cast<std::ptrdiff_t>(stacks_from), log.stacks.end());
        },
        error))
        << error;
    asynccheck::StreamingOptions o;
    o.analysis.threshold_ns = log.run.threshold_ns;
    o.margin_ns = 1'000'000;
    asynccheck::AnalysisFeed feed(o, log.run.env, 4);
    feed.set_sink(&stream);
    for (size_t i = 0; i < log.calls.size(); i += 7) {  // rounds of 7 calls, each with the work that ended before
      const size_t to = std::min(i + 7, log.calls.size());
      const uint64_t now = log.calls[to - 1].end_ns;
      asynccheck::OpVector ops;
      for (const auto& op : log.ops)
        if (op.end_ns <= now && (i == 0 || op.end_ns > log.calls[i - 1].end_ns)) ops.push_back(op);
      feed.add(
          {log.calls.begin() + static_cast<std::ptrdiff_t>(i), log.calls.begin() + static_cast<std::ptrdiff_t>(to)},
          ops, log.marks, now, now);
      while (feed.has_backlog()) feed.compact_chunk(now);
    }
    asynccheck::OpVector rest;
    for (const auto& op : log.ops)
      if (op.end_ns > log.calls.back().end_ns) rest.push_back(op);
    feed.finish({}, std::move(rest), log.marks);
    asynccheck::EventLog tail = log;
    tail.calls.clear();
    tail.ops.clear();
    ASSERT_TRUE(stream.close(tail, error, warning)) << error;
  }
  ASSERT_NE(slurp(live).find("\nstep "), std::string::npos);
  for (const std::string threshold : {"", "--threshold=50us"}) {
    std::vector<std::string> whole_args{"analyze", kRecording.string(), "--overwrite=1",
                                        "--json=" + (dir_ / "whole.json").string()};
    std::vector<std::string> live_args{"analyze", live.string(), "--overwrite=1",
                                       "--json=" + (dir_ / "live.json").string()};
    if (!threshold.empty()) whole_args.push_back(threshold), live_args.push_back(threshold);
    const Result whole = asynccheck(whole_args), replayed = asynccheck(live_args);
    ASSERT_EQ(whole.code(), 0) << whole.err;
    ASSERT_EQ(replayed.code(), 0) << replayed.err;
    EXPECT_NE(slurp(dir_ / "whole.json").find("copy-async-pageable-h2d"), std::string::npos);
    EXPECT_EQ(slurp(dir_ / "live.json"), slurp(dir_ / "whole.json")) << threshold;
    EXPECT_EQ(replayed.err, whole.err) << threshold;  // the summary
  }
  // An output that cannot be written is refused before the analysis, naming the option and its path.
  const Result nowhere = asynccheck({"analyze", live.string(), "--trace=" + (dir_ / "none" / "t.json").string()});
  EXPECT_EQ(nowhere.code(), 2);
  EXPECT_NE(nowhere.first_err_line().find("option 'trace': "), std::string::npos) << nowhere.err;
  EXPECT_NE(nowhere.first_err_line().find((dir_ / "none").string()), std::string::npos) << nowhere.err;
  EXPECT_EQ(nowhere.first_err_line().find(".events."), std::string::npos) << nowhere.err;
  EXPECT_EQ(nowhere.first_err_line().find("line "), std::string::npos) << nowhere.err;
  const Result traced = asynccheck({"analyze", live.string(), "--trace=" + (dir_ / "t.json").string()});
  EXPECT_EQ(traced.code(), 0) << traced.err;
  const std::string trace = slurp(dir_ / "t.json");
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(trace.find("cudaMemcpy"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir_))  // the drawn events' temporary file is gone
    EXPECT_EQ(entry.path().filename().string().find(".events."), std::string::npos) << entry.path();
}

// A real run's recording, saved as it went on the GPU machine (samples/traps stream_sync_after_launches 6000, rounds
// of 1024 calls: its two steps), with the report the run itself wrote: analyzed here, in its steps, the same JSON
// and the same summary (but for the library's own exit lines: its stats and CUPTI's untimed work). The report is the
// run's but for its launches held by a full queue, whose evidence was re-derived when it changed on purpose
// (2026-11-28: the kernel that ended by their return, not the next one).
TEST_F(Cli, ARealRunsRecordingReportsOfflineWhatTheRunReported) {
  const fs::path runs = kSource / "tests/fixtures/runs";
  const std::string rec = slurp(runs / "traps_steps.rec");
  ASSERT_NE(rec.find("\nstep "), rec.rfind("\nstep ")) << "two steps";
  const Result r = asynccheck({"analyze", (runs / "traps_steps.rec").string(), "--json=" + (dir_ / "r.json").string()});
  ASSERT_EQ(r.code(), 0) << r.err;
  EXPECT_EQ(slurp(dir_ / "r.json"), slurp(runs / "traps_steps.live.json"));
  EXPECT_EQ(r.err, slurp(runs / "traps_steps.live.txt"));
}

// The program's output and exit status are its own (here without a GPU: asynccheck fails open).
TEST_F(Cli, ProgramOutputAndExitCodePassThrough) {
  Result r = asynccheck({"--", "/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.code(), 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_NE(r.err.find("err\n"), std::string::npos);
  r = asynccheck({"--", "/bin/sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(WIFSIGNALED(r.status)) << "the command should end by the program's signal";
  EXPECT_EQ(WTERMSIG(r.status), SIGTERM);
  r = asynccheck({"--", (dir_ / "no-such-program").string()});
  EXPECT_EQ(r.code(), 127);
  EXPECT_NE(r.err.find("cannot run '" + (dir_ / "no-such-program").string() + "': No such file or directory"),
            std::string::npos)
      << r.err;
}

// The options the library acts on in the program reach it: the command passes them in ASYNCCHECK_OPTIONS
// (cli/run.cpp, child_options), here seen by a program that prints it.
TEST_F(Cli, LibraryOptionsReachTheProgram) {
  const Result r =
      asynccheck({"--device-buffers=16", "--device-buffer-kb=1024", "--flush-period=2s", "--activity-buffer-kb=128",
                  "--compact-backlog=0", "--event-cache-kb=0", "--", "/bin/sh", "-c", "echo \"$ASYNCCHECK_OPTIONS\""});
  EXPECT_EQ(r.code(), 0) << r.err;
  for (const char* want : {"device_buffers=16", "device_buffer_kb=1024", "flush_period=2000000000ns",
                           "activity_buffer_kb=128", "compact_backlog=0", "event_cache_kb=0", "summary=0"}) {
    EXPECT_NE((":" + r.out).find(std::string(":") + want), std::string::npos) << want << " in " << r.out;
  }
  // A value with the separator in it is quoted, so that the library reads it whole (it read "nvtx" once).
  const Result ranged =
      asynccheck({"--capture-range=nvtx:train step", "--", "/bin/sh", "-c", "echo \"$ASYNCCHECK_OPTIONS\""});
  EXPECT_EQ(ranged.code(), 0) << ranged.err;
  EXPECT_NE(ranged.out.find(":capture_range=\"nvtx:train step\":"), std::string::npos) << ranged.out;
}

// --trace: each process of the program draws its trace as its analysis lets the events go (the analysis keeps
// streaming, compact=1), into a directory the command makes beside the trace's path; the command writes the other
// reports from the hand-offs and puts each process's trace in place, in pid order. Without a GPU the library fails
// open and still draws a trace (with no events), which is what is checked here.
TEST_F(Cli, TheProgramsProcessWritesTheTrace) {
  // The process draws it in the command's directory, one file per process (whatever directory the program went
  // to), with what decides its suppressed findings; the command puts it in place, here under a path with the
  // options' separator and a space.
  fs::create_directories(dir_ / "a b:c");
  std::ofstream(dir_ / "s.supp") << "*:nothing.cu\n";
  const std::string trace = (dir_ / "a b:c" / "t.json").string();
  const std::string json = (dir_ / "r.json").string();
  Result r = asynccheck({"--trace=" + trace, "--json=" + json, "--suppressions=" + (dir_ / "s.supp").string(),
                         "--library-frames=libfoo", "--", "/bin/bash", "-c", "echo \"$ASYNCCHECK_OPTIONS\"; cd /"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_EQ(r.err.find("asynccheck: ERROR"), std::string::npos) << r.err;
  const std::vector<std::string> wanted = {":compact=1:",
                                           "/.asynccheck-trace.",
                                           "/trace.%p.json",
                                           ":suppressions=" + (dir_ / "s.supp").string() + ":",
                                           ":library_frames=libfoo:",
                                           ":symbolize=1"};
  for (const std::string& want : wanted) {
    EXPECT_NE((":" + r.out).find(want), std::string::npos) << want << " in " << r.out;
  }
  EXPECT_NE(slurp(trace).find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(slurp(json).find("\"sites\""), std::string::npos) << slurp(json);
  // Drawn beside it, moved into place: nothing else is left there (the events file, the directory it was drawn in).
  for (const auto& e : fs::directory_iterator(dir_ / "a b:c")) EXPECT_EQ(e.path().filename(), "t.json");

  // --format=trace under --output is the same trace; the command writes the other formats.
  const std::string stem = (dir_ / "stem").string();
  r = asynccheck({"--format=json,trace", "--output=" + stem, "--", "/bin/bash", "-c", "echo \"$ASYNCCHECK_OPTIONS\""});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_NE(r.out.find("/trace.%p.json"), std::string::npos) << r.out;
  EXPECT_NE(slurp(stem + ".trace.json").find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(slurp(stem + ".json").find("\"sites\""), std::string::npos);

  // A program exec'd without a fork (the same pid) draws its trace afresh: the shell's events file, made under the
  // same name, was unlinked as soon as it was made.
  const std::string exec_trace = (dir_ / "exec.json").string();
  r = asynccheck({"--trace=" + exec_trace, "--", "/bin/bash", "-c", "exec /bin/bash -c true"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_EQ(r.err.find("WARNING"), std::string::npos) << r.err;
  EXPECT_NE(slurp(exec_trace).find("\"traceEvents\""), std::string::npos);
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find("asynccheck-trace"), std::string::npos) << e.path();
  }

  // %p: the command names the file by the process's pid; "-": the trace on the command's standard output, after the
  // program's own.
  r = asynccheck({"--trace=" + (dir_ / "pid.%p.json").string(), "--", "/bin/bash", "-c", "true"});
  EXPECT_EQ(r.code(), 0) << r.err;
  size_t by_pid = 0;
  for (const auto& e : fs::directory_iterator(dir_)) by_pid += e.path().filename().string().rfind("pid.", 0) == 0;
  EXPECT_EQ(by_pid, 1u);
  r = asynccheck({"--trace=-", "--", "/bin/bash", "-c", "echo program"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_EQ(r.out.rfind("program\n{\"traceEvents\"", 0), 0u) << r.out.substr(0, 200);
  // An existing trace stays unless --overwrite (refused before the program runs: a usage error).
  std::ofstream(dir_ / "kept.json") << "mine";
  r = asynccheck({"--trace=" + (dir_ / "kept.json").string(), "--", "/bin/bash", "-c", "true"});
  EXPECT_EQ(r.code(), 2) << r.err;
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(slurp((dir_ / "kept.json").string()), "mine");
  r = asynccheck({"--trace=" + (dir_ / "kept.json").string(), "--overwrite", "--", "/bin/bash", "-c", "true"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_NE(slurp((dir_ / "kept.json").string()).find("\"traceEvents\""), std::string::npos);

  // Without a trace the process resolves no stacks and gets none of the trace's options.
  r = asynccheck({"--", "/bin/bash", "-c", "echo \"$ASYNCCHECK_OPTIONS\""});
  EXPECT_EQ(r.out.find("trace="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(":symbolize=0"), std::string::npos) << r.out;

  // A trace that cannot be put in place (the program removed its directory) fails the command as any report does.
  fs::create_directories(dir_ / "gone");
  r = asynccheck({"--trace=" + (dir_ / "gone" / "t.json").string(), "--", "/bin/bash", "-c",
                  "rm -r '" + (dir_ / "gone").string() + "'; true"});
  EXPECT_EQ(r.code(), 1) << r.err;
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;

  // A process that drew no trace (here: its trace option taken away) is an error of its own. (Each process draws one
  // and the command puts them in place in pid order, as the other reports: only processes that used CUDA, and the
  // first, report: interpose/lineage.h.)
  r = asynccheck({"--trace=" + (dir_ / "none.json").string(), "--", "/bin/bash", "-c",
                  "ASYNCCHECK_OPTIONS=${ASYNCCHECK_OPTIONS/:trace=/:x=} exec /bin/bash -c true"});
  EXPECT_EQ(r.code(), 1) << r.err;
  EXPECT_NE(r.err.find("was not written"), std::string::npos) << r.err;
}

// Raw LD_PRELOAD use: a bad option is printed, the program still runs with its own exit code, and the report
// says monitoring was off.
TEST_F(Cli, PreloadWithBadOptionsFailsOpen) {
  // bash, not dash: dash leaves with _exit(), which skips exit handlers.
  const Result r = run({"/bin/bash", "-c", "echo hi; exit 4"},
                       {"LD_PRELOAD=" + kLibrary.string(), "ASYNCCHECK_OPTIONS=threshold=1ms:bogus=1"});
  EXPECT_EQ(r.code(), 4);
  EXPECT_EQ(r.out, "hi\n");
  EXPECT_NE(r.err.find("asynccheck: ERROR: ASYNCCHECK_OPTIONS: unknown option 'bogus'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("asynccheck: monitoring was off: ASYNCCHECK_OPTIONS: unknown option 'bogus'"), std::string::npos)
      << r.err;
}

TEST_F(Cli, ErrorExitcodeBaselineAndSuppressions) {
  const std::string rec = kRecording.string();
  // Findings at or above --fail-on: the error exit code.
  Result r = asynccheck({"analyze", rec, "--error-exitcode=9"});
  EXPECT_EQ(r.code(), 9) << r.err;
  EXPECT_NE(r.err.find("[copy-async-pageable-h2d] cudaMemcpyAsync at "), std::string::npos) << r.err;
  // Without --error-exitcode, findings do not change the exit code.
  EXPECT_EQ(asynccheck({"analyze", rec}).code(), 0);
  // A baseline of this run: the same findings are known, exit 0, and the summary says so.
  const std::string base = (dir_ / "b.baseline").string();
  r = asynccheck({"analyze", rec, "--save-baseline=" + base});
  ASSERT_EQ(r.code(), 0) << r.err;
  EXPECT_TRUE(slurp(base).starts_with("asynccheck-baseline 1\n")) << slurp(base);
  r = asynccheck({"analyze", rec, "--baseline=" + base, "--error-exitcode=9"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_NE(r.err.find("(in baseline)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" new, "), std::string::npos) << r.err;
  // An emptied baseline: everything is new again.
  std::ofstream(dir_ / "empty.baseline") << "asynccheck-baseline 1\n";
  EXPECT_EQ(
      asynccheck({"analyze", rec, "--baseline=" + (dir_ / "empty.baseline").string(), "--error-exitcode=9"}).code(), 9);
  // Suppress the sample's own file: nothing left to fail on; the hit count is shown.
  std::ofstream(dir_ / "all.supp") << "# the sample is meant to stall\n*:seed000_answer.cu\n";
  r = asynccheck({"analyze", rec, "--suppressions=" + (dir_ / "all.supp").string(), "--error-exitcode=9"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_NE(r.err.find("*:seed000_answer.cu"), std::string::npos) << r.err;
  // --fail-on=error ignores warnings and notes only.
  std::ofstream(dir_ / "errors.supp") << "copy-async-pageable-h2d:*\ncopy-async-pageable-d2h:*\n";
  r = asynccheck(
      {"analyze", rec, "--suppressions=" + (dir_ / "errors.supp").string(), "--fail-on=error", "--error-exitcode=9"});
  EXPECT_EQ(r.code(), 0) << r.err;
}

TEST_F(Cli, OutputWritesEachFormatOnceAndNeverOverwrites) {
  const std::string stem = (dir_ / "r").string();
  Result r = asynccheck(
      {"--read", kRecording.string(), "--format=json,sarif,trace", "--output=" + stem, "--log-file=" + stem + ".txt"});
  ASSERT_EQ(r.code(), 0) << r.err;
  EXPECT_TRUE(slurp(stem + ".json").starts_with("{\n  \"schema\": \"asynccheck-report\""));
  EXPECT_NE(slurp(stem + ".sarif").find("\"2.1.0\""), std::string::npos);
  EXPECT_NE(slurp(stem + ".trace.json").find("traceEvents"), std::string::npos);
  EXPECT_NE(slurp(stem + ".txt").find("SUMMARY:"), std::string::npos);
  EXPECT_EQ(r.err, "");  // the summary went to the log file
  for (const fs::directory_entry& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
  }
  // Again: the files exist now.
  r = asynccheck({"--read", kRecording.string(), "--format=json", "--output=" + stem + ".json"});
  EXPECT_EQ(r.code(), 2);
  EXPECT_NE(r.first_err_line().find("it already exists"), std::string::npos) << r.err;
  r = asynccheck({"--read", kRecording.string(), "--format=json", "--output=" + stem + ".json", "--overwrite=1"});
  EXPECT_EQ(r.code(), 0) << r.err;
}

}  // namespace
