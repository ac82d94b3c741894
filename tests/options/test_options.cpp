// The option table: parsing, defaults, validation and the exact messages users see for bad input.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "analysis/event_memory.h"
#include "options/nearest.h"
#include "options/options.h"

namespace asynccheck {
namespace {

TEST(Options, DefaultsComeFromTheTable) {
  const Options o;
  EXPECT_EQ(o.threshold, 100'000u);
  EXPECT_EQ(o.format, "");  // --output alone writes JSON
  EXPECT_EQ(o.log_file, "stderr");
  EXPECT_FALSE(o.overwrite);
  EXPECT_TRUE(o.summary);
  EXPECT_EQ(o.print_limit, 10u);
}

// event_cache_kb's default is the event memory's own, and both ends of its range are taken.
TEST(Options, TheEventCacheDefaultsToTheEventMemorysAndTakesItsWholeRange) {
  EXPECT_EQ(size_t{Options{}.event_cache_kb} * 1024, event_memory::kCacheBytes);
  for (const char* text : {"event_cache_kb=0", "event_cache_kb=65536"}) {
    Options o;
    std::string error;
    EXPECT_TRUE(parse_options(text, o, error)) << text << ": " << error;
  }
}

TEST(Options, ParsesEverySeparatorAndLaterItemsWin) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse_options("threshold=2ms:print_limit=3 summary=0\nprint_limit=4\tsave=/tmp/x.%p.rec", o, error))
      << error;
  EXPECT_EQ(o.threshold, 2'000'000u);
  EXPECT_EQ(o.print_limit, 4u);
  EXPECT_FALSE(o.summary);
  EXPECT_EQ(o.save, "/tmp/x.%p.rec");
}

// A value that holds a separator is quoted ("nvtx:train step", a path with ':'), in either quote character; a quote
// left open, or text after the closing one, is refused with the item.
TEST(Options, QuotedValuesKeepTheirSeparators) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse_options("threshold=1ms:capture_range=\"nvtx:train step\":save='/tmp/a:b c.rec' stats", o, error))
      << error;
  EXPECT_EQ(o.capture_range, "nvtx:train step");
  EXPECT_EQ(o.save, "/tmp/a:b c.rec");
  EXPECT_EQ(o.threshold, 1'000'000u);
  EXPECT_TRUE(o.stats);
  ASSERT_TRUE(parse_options("save='say \"hi\"'", o, error)) << error;
  EXPECT_EQ(o.save, "say \"hi\"");
  Options bad;
  EXPECT_FALSE(parse_options("threshold=1ms:capture_range=\"nvtx:x", bad, error));
  EXPECT_EQ(error, "a quote left open in 'capture_range=\"nvtx:x' (valid: name=\"value\")");
  EXPECT_FALSE(parse_options("save=\"a\"b:stats", bad, error));
  EXPECT_EQ(error, "'save=\"a\"b' goes on after its closing quote (valid: name=\"value\" then ':' or a space)");
  // A quote inside a value, not at its start, is the value's own; so is one after a second '='.
  ASSERT_TRUE(parse_options("save=it's.rec", o, error)) << error;
  EXPECT_EQ(o.save, "it's.rec");
  ASSERT_TRUE(parse_options("save=a=\"b", o, error)) << error;
  EXPECT_EQ(o.save, "a=\"b");
  // The range as the docs spell it, unquoted: ':' ended the value, and the error says to quote it.
  EXPECT_FALSE(parse_options("capture_range=nvtx:step", bad, error));
  EXPECT_NE(error.find("in ASYNCCHECK_OPTIONS quote it: capture_range=\"nvtx:NAME\""), std::string::npos) << error;
}

TEST(Options, QuotedValueReadsBackWhole) {
  for (const std::string v : {"plain", "nvtx:train step", "/tmp/a:b c.rec", "say \"hi\"", "it's", "tab\there"}) {
    Options o;
    std::string error;
    ASSERT_TRUE(parse_options("save=" + quoted_value(v) + ":stats", o, error)) << v << ": " << error;
    EXPECT_EQ(o.save, v);
    EXPECT_TRUE(o.stats);
  }
  EXPECT_EQ(quoted_value("plain"), "plain");
  EXPECT_EQ(quoted_value("a b"), "\"a b\"");
  EXPECT_EQ(quoted_value("say \"hi\" x"), "'say \"hi\" x'");
}

// A typo must not turn a CI job's gate off: the items after a badly quoted one still count (core.cpp).
TEST(Options, ValidItemsAfterABadQuote) {
  for (const char* text : {"save=\"x\"y:require_monitoring=1", "save=\"x:require_monitoring=1",
                           "threshold=\"1ms\"z require_monitoring fail_on=note"}) {
    Options o;
    parse_valid_items(text, o);
    EXPECT_TRUE(o.require_monitoring) << text;
  }
}

TEST(Options, DurationsTakeUnitsAndDefaultToMicroseconds) {
  uint64_t ns = 0;
  ASSERT_TRUE(parse_duration("250", ns));
  EXPECT_EQ(ns, 250'000u);
  ASSERT_TRUE(parse_duration("7ns", ns));
  EXPECT_EQ(ns, 7u);
  ASSERT_TRUE(parse_duration("3s", ns));
  EXPECT_EQ(ns, 3'000'000'000u);
  EXPECT_FALSE(parse_duration("", ns));
  EXPECT_FALSE(parse_duration("ms", ns));
  EXPECT_FALSE(parse_duration("1.5ms", ns));
  EXPECT_FALSE(parse_duration("-1us", ns));
  EXPECT_FALSE(parse_duration("99999999999999999999s", ns));
  EXPECT_FALSE(parse_duration("18446744073709551615s", ns));  // overflows when scaled
  EXPECT_EQ(format_duration_option(100'000), "100us");
  EXPECT_EQ(format_duration_option(2'000'000), "2ms");
  EXPECT_EQ(format_duration_option(1'500), "1500ns");
  EXPECT_EQ(format_duration_option(0), "0us");
}

TEST(Options, OutputFilesFromFormatAndOutput) {
  Options o;
  std::string error;
  OutputFiles f;
  ASSERT_TRUE(parse_options("format=sarif:output=r.sarif", o, error)) << error;
  ASSERT_TRUE(output_files(o, f, error)) << error;
  EXPECT_EQ(f.sarif, "r.sarif");  // one format: the path as given
  EXPECT_EQ(f.json, "");
  o = Options{};
  ASSERT_TRUE(parse_options("output=plain.json", o, error)) << error;
  ASSERT_TRUE(output_files(o, f, error)) << error;
  EXPECT_EQ(f.json, "plain.json");  // no format: JSON
  o = Options{};
  ASSERT_TRUE(parse_options("format=json,sarif,trace,html:output=out/r.%p", o, error)) << error;
  ASSERT_TRUE(output_files(o, f, error)) << error;
  EXPECT_EQ(f.json, "out/r.%p.json");  // several: a stem
  EXPECT_EQ(f.sarif, "out/r.%p.sarif");
  EXPECT_EQ(f.trace, "out/r.%p.trace.json");
  EXPECT_EQ(f.html, "out/r.%p.html");
  o = Options{};
  ASSERT_TRUE(parse_options("output=r.json:json=r.json", o, error)) << error;  // the same path twice is fine
  ASSERT_TRUE(output_files(o, f, error)) << error;
  EXPECT_EQ(f.json, "r.json");
}

// One format: --output gets its extension unless it has it (issue 21); '-' is standard output.
TEST(Options, OneFormatOutputGetsItsExtension) {
  const struct {
    const char* text;
    std::string json, sarif, trace, html = "";
  } cases[] = {
      {"output=r", "r.json", "", ""},
      {"output=r.%p", "r.%p.json", "", ""},
      {"format=sarif:output=out/r", "", "out/r.sarif", ""},
      {"format=sarif:output=r.sarif", "", "r.sarif", ""},
      {"format=trace:output=t", "", "", "t.trace.json"},
      {"format=trace:output=t.json", "", "", "t.json"},
      {"format=json:output=r.sarif", "r.sarif.json", "", ""},
      {"output=-", "-", "", ""},
      {"format=sarif:output=-", "", "-", ""},
      {"json=-", "-", "", ""},
      {"trace=-:format=json:output=r", "r.json", "", "-"},
      {"format=html:output=r", "", "", "", "r.html"},
      {"format=html:output=r.html", "", "", "", "r.html"},
      {"format=html:output=-", "", "", "", "-"},
      {"html=page.html", "", "", "", "page.html"},
  };
  for (const auto& c : cases) {
    Options o;
    std::string error;
    OutputFiles f;
    ASSERT_TRUE(parse_options(c.text, o, error)) << c.text << ": " << error;
    ASSERT_TRUE(output_files(o, f, error)) << c.text << ": " << error;
    EXPECT_EQ(f.json, c.json) << c.text;
    EXPECT_EQ(f.sarif, c.sarif) << c.text;
    EXPECT_EQ(f.trace, c.trace) << c.text;
    EXPECT_EQ(f.html, c.html) << c.text;
  }
}

// On/off options are on when named alone, in ASYNCCHECK_OPTIONS as on the command line; the CI options are in the
// table, so that raw LD_PRELOAD use has them too (issue 21).
TEST(Options, FlagsAloneAreOnAndTheExitOptionsAreInTheTable) {
  Options o;
  std::string error;
  EXPECT_EQ(o.error_exitcode, -1);
  EXPECT_EQ(o.fail_on, rules::Level::Warning);
  EXPECT_FALSE(o.require_monitoring);
  ASSERT_TRUE(parse_options("stats:overwrite:error_exitcode=3:fail_on=error:require_monitoring", o, error)) << error;
  EXPECT_TRUE(o.stats);
  EXPECT_TRUE(o.overwrite);
  EXPECT_TRUE(o.require_monitoring);
  EXPECT_EQ(o.error_exitcode, 3);
  EXPECT_EQ(o.fail_on, rules::Level::Error);
  EXPECT_EQ(option_kind("stats"), OptionKind::Flag);
  EXPECT_EQ(option_kind("require_monitoring"), OptionKind::Flag);
  EXPECT_EQ(option_kind("threshold"), OptionKind::Value);
  EXPECT_EQ(option_kind("error_exitcode"), OptionKind::Value);
  EXPECT_EQ(option_kind("bogus"), OptionKind::Unknown);
  const std::string help = options_help();
  EXPECT_NE(help.find("error_exitcode (ExitCode, default none)"), std::string::npos) << help;
  EXPECT_NE(help.find("fail_on (Level, default warning)"), std::string::npos) << help;
  EXPECT_NE(help.find("require_monitoring (Bool, default 0)"), std::string::npos) << help;
}

// Options with a bad item: the valid ones still hold for what a broken run honours (require_monitoring).
TEST(Options, ValidItemsOfBadOptions) {
  Options o;
  parse_valid_items("bogus=1:require_monitoring:threshold=soon:error_exitcode=7:fail_on=note", o);
  EXPECT_TRUE(o.require_monitoring);
  EXPECT_EQ(o.error_exitcode, 7);
  EXPECT_EQ(o.fail_on, rules::Level::Note);
  EXPECT_EQ(o.threshold, Options{}.threshold);
}

TEST(Options, NearestNameIsATypoOrABeginning) {
  const std::vector<std::string_view> names = option_names();
  EXPECT_EQ(nearest_name("overwrit", names), "overwrite");
  EXPECT_EQ(nearest_name("treshold", names), "threshold");
  EXPECT_EQ(nearest_name("threshlod", names), "threshold");  // two letters swapped: one typo
  EXPECT_EQ(nearest_name("print_limt", names), "print_limit");
  EXPECT_EQ(nearest_name("require_monitor", names), "require_monitoring");
  EXPECT_EQ(nearest_name("over", names), "overwrite");  // the one name it begins
  EXPECT_EQ(nearest_name("comp", names), "");           // begins several
  EXPECT_EQ(nearest_name("bogus", names), "");
  EXPECT_EQ(nearest_name("x", names), "");
  EXPECT_EQ(nearest_name("", names), "");
}

TEST(Options, OrderOfFormatAndOutputDoesNotMatter) {
  Options o;
  std::string error;
  ASSERT_TRUE(set_option("format", "sarif", o, error)) << error;  // alone it is incomplete, but not yet wrong
  ASSERT_TRUE(set_option("output", "a.sarif", o, error)) << error;
  EXPECT_TRUE(check_options(o, error)) << error;
}

// Every bad input, with the exact message: the user learns what is wrong and what would be valid.
TEST(Options, BadInputMessagesArePinned) {
  const std::string names =
      "threshold, cost_threshold, capture_range, site_threshold, format, output, json, sarif, trace, html, "
      "log_file, save, "
      "handoff, "
      "suppressions, source_root, baseline, save_baseline, error_exitcode, fail_on, require_monitoring, "
      "overwrite, compact, compact_round, compact_backlog, event_cache_kb, flush_period, stats, print_limit, summary, "
      "symbolize, "
      "activity_buffer_kb, device_buffers, device_buffer_kb, signal_timeout, help, library_frames";
  const struct {
    const char* text;
    std::string message;
  } cases[] = {
      {"bogus=1", "unknown option 'bogus' (valid: " + names + ")"},
      {"overwite=1", "unknown option 'overwite'; did you mean 'overwrite'? (valid: " + names + ")"},
      {"stats:bogus", "unknown option 'bogus' (valid: " + names + ")"},
      {"error_exitcode=256", "option 'error_exitcode': '256' is not an exit code (valid: 0 to 255)"},
      {"error_exitcode=-1", "option 'error_exitcode': '-1' is not an exit code (valid: 0 to 255)"},
      {"fail_on=fatal", "option 'fail_on': 'fatal' is not a level (valid: note, warning, error)"},
      {"fail_on=none", "option 'fail_on': 'none' is not a level (valid: note, warning, error)"},
      {"format=json,sarif:output=-",
       "option 'output': '-' (standard output) holds one report, not 2 (--format=json,sarif; valid: one format, or a "
       "file stem for several)"},
      {"json=-:trace=-",
       "the json and trace reports are both given '-' (standard output), which holds one (valid: a file for the "
       "other)"},
      {"save=-",
       "option 'save': '-' (standard output) cannot hold a recording, written as the program runs beside its "
       "own output (valid: a file)"},
      {"log_file=-", "option 'log_file': '-' is not a stream name here (valid: stdout, stderr, or a file)"},
      {"html=-:json=-",
       "the json and html reports are both given '-' (standard output), which holds one (valid: a file for the "
       "other)"},
      {"json=-:save_baseline=-",
       "the json and save_baseline reports are both given '-' (standard output), which holds one (valid: a file for "
       "the other)"},
      {"sarif=-:log_file=stdout",
       "the sarif report goes to standard output ('-'), and so does the summary (log_file=stdout); valid: the "
       "summary on stderr (the default) or in a file"},
      {"threshold", "expected name=value, got 'threshold'"},
      {"threshold=fast",
       "option 'threshold': 'fast' is not a duration (valid: a whole number with ns, us, ms or s, "
       "e.g. 100us, 2ms; no unit means us)"},
      {"threshold=61s", "option 'threshold': 61s is out of range (valid: 0 to 60s)"},
      {"print_limit=-1", "option 'print_limit': '-1' is not a non-negative whole number"},
      {"print_limit=", "option 'print_limit': '' is not a non-negative whole number"},
      {"summary=maybe", "option 'summary': 'maybe' is not a boolean (valid: 1, 0, true, false, yes, no)"},
      {"activity_buffer_kb=1", "option 'activity_buffer_kb': 1 is out of range (valid: 64 to 262144)"},
      {"event_cache_kb=65537", "option 'event_cache_kb': 65537 is out of range (valid: 0 to 65536)"},
      {"device_buffers=1", "option 'device_buffers': 1 is out of range (valid: 2 to 250)"},
      {"device_buffers=251", "option 'device_buffers': 251 is out of range (valid: 2 to 250)"},
      {"flush_period=99ms",
       "option 'flush_period': 99ms is out of range (valid: 0 for a forced flush every round, or 100ms to 60s)"},
      {"flush_period=61s",
       "option 'flush_period': 61s is out of range (valid: 0 for a forced flush every round, or 100ms to 60s)"},
      {"device_buffer_kb=63",
       "option 'device_buffer_kb': 63 is out of range (valid: 0 for CUPTI's own size, or 64 to 65536)"},
      {"device_buffer_kb=65537",
       "option 'device_buffer_kb': 65537 is out of range (valid: 0 for CUPTI's own size, or 64 to 65536)"},
      {"compact_round=10", "option 'compact_round': 10 is out of range (valid: 1024 to 1048576)"},
      {"compact_round=4096:compact_backlog=5000",
       "option 'compact_backlog': 5000 is out of range (valid: 0 for no limit, or 8192 (2 x compact_round) to "
       "4294967296)"},
      {"format=xml:output=a",
       "option 'format': 'xml' is not a format (valid: json, sarif, trace, html; comma-separated)"},
      {"format=json,,sarif:output=a",
       "option 'format': '' is not a format (valid: json, sarif, trace, html; comma-separated)"},
      {"format=sarif", "option 'format': 'sarif' needs an output path (--output=PATH)"},
      {"format=json", "option 'format': 'json' needs an output path (--output=PATH)"},
      {"json=a.json:format=json,sarif:output=b",
       "the json report is given two paths, 'a.json' (option 'json') and 'b.json' (option 'output'); give one"},
      {"library_frames=libfoo*.so,,libbar*",
       "option 'library_frames': 'libfoo*.so,,libbar*' has an empty item (valid: comma-separated globs over module "
       "names, e.g. libmylib*.so*; '-' first drops the default list)"},
      {"library_frames=libfoo*.so,-",
       "option 'library_frames': 'libfoo*.so,-' has '-' after its first item (valid: comma-separated globs over "
       "module names, e.g. libmylib*.so*; '-' first drops the default list)"},
  };
  for (const auto& c : cases) {
    Options o;
    std::string error;
    EXPECT_FALSE(parse_options(c.text, o, error)) << c.text;
    EXPECT_EQ(error, c.message) << c.text;
  }
}

TEST(Options, BadItemKeepsEarlierItems) {
  Options o;
  std::string error;
  EXPECT_FALSE(parse_options("print_limit=3:threshold=x:print_limit=5", o, error));
  EXPECT_EQ(o.print_limit, 3u);
}

TEST(Options, HelpListsEveryOptionWithItsDefault) {
  const std::string help = options_help();
  EXPECT_NE(help.find("  threshold (Duration, default 100us)"), std::string::npos) << help;
  EXPECT_NE(help.find("  overwrite (Bool, default 0)"), std::string::npos);
  EXPECT_NE(help.find("  log_file (Text, default stderr)"), std::string::npos);
  EXPECT_NE(help.find("  save (Text, default \"\")"), std::string::npos);
}

TEST(Options, ExpandPathReplacesPidHostAndRankOnly) {
  EXPECT_EQ(expand_path("r.%p.json", 42), "r.42.json");
  EXPECT_EQ(expand_path("%%p%x%", 7), "%7%x%");  // only %p, %r and %h are special
  EXPECT_EQ(expand_path("r.%r.json", 42, 3), "r.3.json");
  EXPECT_EQ(expand_path("r.%r.%p.json", 42, 0), "r.0.42.json");
  EXPECT_EQ(expand_path("r.%r.json", 42), "r.42.json");  // no rank: the pid, one name per process
  EXPECT_EQ(expand_path("r.%r.json", 42, -1), "r.42.json");
  const std::string host = expand_path("%h", 1);
  EXPECT_FALSE(host.empty());
  EXPECT_EQ(host.find('%'), std::string::npos);
}

// A fake environment for rank_from: NAME=VALUE pairs.
std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

TEST(Options, RankComesFromEachLaunchersVariable) {
  const std::pair<std::string, std::string> cases[] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                                       {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},
                                                       {"PMIX_RANK", ""},
                                                       {"PMI_RANK", "PMI_SIZE"},
                                                       {"SLURM_PROCID", "SLURM_STEP_NUM_TASKS"}};
  for (const auto& [var, size] : cases) {
    g_env = {{var, "7"}};
    if (!size.empty()) g_env[size] = "16";
    const Rank r = rank_from(fake_getenv);
    EXPECT_TRUE(r.known()) << var;
    EXPECT_EQ(r.value, 7) << var;
    EXPECT_EQ(r.variable, var);
    EXPECT_EQ(r.world_size, size.empty() ? 0u : 16u) << var;
    EXPECT_EQ(r.size_variable, size);
    EXPECT_EQ(expand_path("out.%r.json", 99, r.value), "out.7.json") << var;
  }
}

TEST(Options, NoRankOutsideAJob) {
  g_env = {};
  const Rank r = rank_from(fake_getenv);
  EXPECT_FALSE(r.known());
  EXPECT_EQ(r.value, -1);
  EXPECT_EQ(r.world_size, 0u);
  EXPECT_EQ(expand_path("out.%r.json", 99, r.value), "out.99.json");
}

TEST(Options, LauncherVariablesComeBeforeSlurms) {
  // mpirun inside a Slurm allocation: SLURM_PROCID is the batch step's, the same for every rank.
  g_env = {{"SLURM_PROCID", "0"},
           {"SLURM_STEP_NUM_TASKS", "1"},
           {"OMPI_COMM_WORLD_RANK", "5"},
           {"OMPI_COMM_WORLD_SIZE", "8"}};
  const Rank r = rank_from(fake_getenv);
  EXPECT_EQ(r.value, 5);
  EXPECT_EQ(r.variable, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(r.world_size, 8u);
}

TEST(Options, RanksThatAreNotWholeNumbersArePassedOver) {
  for (const char* bad : {"", "-1", "1x", " 2", "1234567890", "+3"}) {
    g_env = {{"OMPI_COMM_WORLD_RANK", bad}, {"PMI_RANK", "4"}};
    const Rank r = rank_from(fake_getenv);
    EXPECT_EQ(r.value, 4) << "'" << bad << "'";
    EXPECT_EQ(r.variable, "PMI_RANK");
  }
  g_env = {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "many"}};
  EXPECT_EQ(rank_from(fake_getenv).world_size, 0u);  // a size that is no number is not known
}

TEST(Options, PerProcessPathsHoldPidOrRank) {
  EXPECT_TRUE(per_process_path("r.%p.json"));
  EXPECT_TRUE(per_process_path("r.%r.json"));
  EXPECT_FALSE(per_process_path("r.%h.json"));
  EXPECT_FALSE(per_process_path("r.json"));
}

}  // namespace
}  // namespace asynccheck
