// The option table: parsing, defaults, validation and the exact messages users see for bad input.
#include <gtest/gtest.h>

#include <string>

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

TEST(Options, ParsesEverySeparatorAndLaterItemsWin) {
  Options o;
  std::string error;
  ASSERT_TRUE(parse_options("threshold=2ms:print_limit=3 summary=0\nprint_limit=4\tsave=/tmp/x.%p.rec", o, error)) << error;
  EXPECT_EQ(o.threshold, 2'000'000u);
  EXPECT_EQ(o.print_limit, 4u);
  EXPECT_FALSE(o.summary);
  EXPECT_EQ(o.save, "/tmp/x.%p.rec");
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
  ASSERT_TRUE(parse_options("format=json,sarif,trace:output=out/r.%p", o, error)) << error;
  ASSERT_TRUE(output_files(o, f, error)) << error;
  EXPECT_EQ(f.json, "out/r.%p.json");  // several: a stem
  EXPECT_EQ(f.sarif, "out/r.%p.sarif");
  EXPECT_EQ(f.trace, "out/r.%p.trace.json");
  o = Options{};
  ASSERT_TRUE(parse_options("output=r.json:json=r.json", o, error)) << error;  // the same path twice is fine
  ASSERT_TRUE(output_files(o, f, error)) << error;
  EXPECT_EQ(f.json, "r.json");
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
      "threshold, format, output, json, sarif, trace, log_file, save, suppressions, baseline, save_baseline, "
      "overwrite, compact, stats, print_limit, summary, symbolize, activity_buffer_kb, signal_timeout, help";
  const struct {
    const char* text;
    std::string message;
  } cases[] = {
      {"bogus=1", "unknown option 'bogus' (valid: " + names + ")"},
      {"threshold", "expected name=value, got 'threshold'"},
      {"threshold=fast", "option 'threshold': 'fast' is not a duration (valid: a whole number with ns, us, ms or s, "
                         "e.g. 100us, 2ms; no unit means us)"},
      {"threshold=61s", "option 'threshold': 61s is out of range (valid: 0 to 60s)"},
      {"print_limit=-1", "option 'print_limit': '-1' is not a non-negative whole number"},
      {"print_limit=", "option 'print_limit': '' is not a non-negative whole number"},
      {"summary=maybe", "option 'summary': 'maybe' is not a boolean (valid: 1, 0, true, false, yes, no)"},
      {"activity_buffer_kb=1", "option 'activity_buffer_kb': 1 is out of range (valid: 64 to 262144)"},
      {"format=xml:output=a", "option 'format': 'xml' is not a format (valid: json, sarif, trace; comma-separated)"},
      {"format=json,,sarif:output=a", "option 'format': '' is not a format (valid: json, sarif, trace; comma-separated)"},
      {"format=sarif", "option 'format': 'sarif' needs an output path (--output=PATH)"},
      {"format=json", "option 'format': 'json' needs an output path (--output=PATH)"},
      {"json=a.json:format=json,sarif:output=b",
       "the json report is given two paths, 'a.json' (option 'json') and 'b.json' (option 'output'); give one"},
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

TEST(Options, ExpandPathReplacesPidAndHostOnly) {
  EXPECT_EQ(expand_path("r.%p.json", 42), "r.42.json");
  EXPECT_EQ(expand_path("%%p%x%", 7), "%7%x%");  // only %p and %h are special
  const std::string host = expand_path("%h", 1);
  EXPECT_FALSE(host.empty());
  EXPECT_EQ(host.find('%'), std::string::npos);
}

}  // namespace
}  // namespace asynccheck
