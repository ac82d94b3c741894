// The strict JSON reader (report/json_value.h): what it accepts, what it reads back, and the exact place and words
// of each rejection.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "report/json_value.h"
#include "report/merge.h"
#include "report/report.h"

namespace asynccheck::report {
namespace {

JsonValue parsed(std::string_view text) {
  JsonValue v;
  std::string error;
  EXPECT_TRUE(parse_json(text, v, error)) << text << " -> " << error;
  return v;
}

std::string error_of(std::string_view text) {
  JsonValue v;
  std::string error;
  EXPECT_FALSE(parse_json(text, v, error)) << "accepted: " << text;
  return error;
}

TEST(JsonValue, ReadsEveryKindOfValue) {
  const JsonValue v = parsed(R"( {"a": [1, -2, 3.5, true, false, null, "x"], "b": {}, "c": []} )");
  ASSERT_TRUE(v.is_object());
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v.members()[0].first, "a");  // file order kept
  EXPECT_EQ(v.members()[2].first, "c");
  const JsonValue& a = v["a"];
  ASSERT_TRUE(a.is_array());
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a[0].uint64(), 1u);
  EXPECT_EQ(a[1].int64(), -2);
  EXPECT_FALSE(a[1].uint64());
  EXPECT_EQ(a[2].real(), 3.5);
  EXPECT_FALSE(a[2].int64());  // not a whole number
  EXPECT_TRUE(a[3].is_bool() && a[3].boolean());
  EXPECT_TRUE(a[4].is_bool() && !a[4].boolean());
  EXPECT_TRUE(a[5].is_null());
  EXPECT_EQ(a[6].string(), "x");
  EXPECT_TRUE(v["b"].is_object() && v["b"].size() == 0);
  EXPECT_TRUE(v["c"].is_array() && v["c"].size() == 0);
  EXPECT_TRUE(v["missing"].is_null());
  EXPECT_FALSE(v.has("missing"));
  EXPECT_TRUE(a[99].is_null());
}

TEST(JsonValue, WholeNumbersReadBackExactlyBeyondADouble) {
  // 2^53 + 1 and the extremes of uint64_t/int64_t: a double would round them.
  const JsonValue v = parsed("[9007199254740993, 18446744073709551615, -9223372036854775808, 18446744073709551616]");
  EXPECT_EQ(v[0].uint64(), 9007199254740993ull);
  EXPECT_EQ(v[1].uint64(), 18446744073709551615ull);
  EXPECT_FALSE(v[1].int64());
  EXPECT_EQ(v[2].int64(), INT64_MIN);
  EXPECT_FALSE(v[3].uint64());  // out of range: not a uint64, still a number
  EXPECT_NEAR(*v[3].real(), 1.8446744073709552e19, 1e4);
  EXPECT_FALSE(parsed("1e3").uint64());  // an exponent is not a whole number as written
  EXPECT_FALSE(parsed("1.0").uint64());
  EXPECT_EQ(parsed("-0").int64(), 0);
  EXPECT_EQ(parsed("2.5E-3").real(), 0.0025);
}

TEST(JsonValue, DecodesEscapesAndUtf8) {
  EXPECT_EQ(parsed(R"("a\"b\\c\/d\b\f\n\r\t")").string(), "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(parsed(R"("\u0041\u00e9\u20AC")").string(), "A\xC3\xA9\xE2\x82\xAC");
  EXPECT_EQ(parsed(R"("\ud83d\ude00")").string(), "\xF0\x9F\x98\x80");  // a surrogate pair: U+1F600
  EXPECT_EQ(parsed("\"caf\xC3\xA9 \xF0\x9F\x98\x80\"").string(), "caf\xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(parsed(R"("\u0000")").string(), std::string(1, '\0'));
}

TEST(JsonValue, KnowsWhereEachValueStarts) {
  const JsonValue v = parsed("{\n  \"a\": 1,\n  \"b\": [true,\n   \"x\"]\n}");
  EXPECT_EQ(v.line(), 1u);
  EXPECT_EQ(v.column(), 1u);
  EXPECT_EQ(v["a"].line(), 2u);
  EXPECT_EQ(v["a"].column(), 8u);
  EXPECT_EQ(v["b"][1].line(), 4u);
  EXPECT_EQ(v["b"][1].column(), 4u);
}

TEST(JsonValue, RejectsWhatIsNotStrictJsonWithLineAndColumn) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"", "1:1: unexpected end of input (valid: a value)"},
      {"   ", "1:4: unexpected end of input (valid: a value)"},
      {"{\"a\": 1,}", "1:9: expected a member name in double quotes, found '}'"},
      {"[1, 2,]", "1:7: unexpected ']' (valid: a value: object, array, string, number, true, false, null)"},
      {"[1 2]", "1:4: expected ',' or ']' after an item, found '2'"},
      {"{\"a\" 1}", "1:6: expected ':' after a member name, found '1'"},
      {"{\"a\": 1 \"b\": 2}", "1:9: expected ',' or '}' after a member, found '\"'"},
      {"{\n  \"a\": 1,\n  \"a\": 2\n}", "3:3: duplicate member name \"a\" (valid: each name once per object)"},
      {"01", "1:2: a number with a leading zero (valid: 0, or digits starting 1-9)"},
      {"1.", "1:3: expected a digit after '.', found end of input"},
      {"1e", "1:3: expected a digit in the exponent, found end of input"},
      {"-", "1:2: expected a digit, found end of input"},
      {"+1", "1:1: unexpected '+' (valid: a value: object, array, string, number, true, false, null)"},
      {"NaN", "1:1: unexpected 'N' (valid: a value: object, array, string, number, true, false, null)"},
      {"tru", "1:1: unexpected 't' (valid: a value: object, array, string, number, true, false, null)"},
      {"{} {}", "1:4: unexpected '{' after the document (valid: one JSON value)"},
      {"\"abc", "1:1: a string that never ends (no closing '\"')"},
      {"\"a\nb\"", "1:3: a raw control character byte 0x0a in a string (valid: an escape such as \\n or \\u00XX)"},
      {"\"\\x\"", "1:2: invalid escape '\\x' (valid: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"},
      {"\"\\u12G4\"", "1:6: \\u needs 4 hex digits, found 'G'"},
      {"\"\\ud83d\"", "1:2: a high surrogate \\u escape without a low one after it (valid: a pair \\uD8xx\\uDCxx)"},
      {"\"\\ude00\"", "1:2: a low surrogate \\u escape without a high one before it (valid: a pair \\uD8xx\\uDCxx)"},
      {"\"\xC3\"", "1:2: invalid UTF-8 at byte 0xc3 (valid: UTF-8 text)"},
      {"\"\xC0\xAF\"", "1:2: invalid UTF-8 at byte 0xc0 (valid: UTF-8 text)"},          // overlong '/'
      {"\"\xED\xA0\x80\"", "1:2: invalid UTF-8 at byte 0xed (valid: UTF-8 text)"},      // a surrogate
      {"\"\xF4\x90\x80\x80\"", "1:2: invalid UTF-8 at byte 0xf4 (valid: UTF-8 text)"},  // above U+10FFFF
      {"\xEF\xBB\xBF{}", "1:1: a byte order mark (valid: UTF-8 without one)"},
      {"[1,\n 2,\n x]", "3:2: unexpected 'x' (valid: a value: object, array, string, number, true, false, null)"},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(error_of(text), want) << "input: " << text;
}

TEST(JsonValue, BoundsNestingDepth) {
  const std::string ok = std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']');
  parsed(ok);
  const std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_EQ(error_of(deep), "1:" + std::to_string(kMaxJsonDepth + 1) + ": nested deeper than " +
                                std::to_string(kMaxJsonDepth) + " levels");
  // Far deeper input fails the same way, without exhausting the stack.
  EXPECT_NE(error_of(std::string(1'000'000, '[')).find("nested deeper than"), std::string::npos);
}

TEST(JsonValue, NamesTypesForMessages) {
  EXPECT_EQ(json_type_name(parsed("{}").type()), "an object");
  EXPECT_EQ(json_type_name(parsed("\"\"").type()), "a string");
  EXPECT_EQ(json_type_name(parsed("1").type()), "a number");
  EXPECT_EQ(json_type_name(parsed("null").type()), "null");
}

}  // namespace
}  // namespace asynccheck::report

namespace asynccheck::report {
namespace {

// A program name or argument that is not UTF-8 (read raw from /proc/self/cmdline) made a report our own reader
// refused, so that merge failed on it (issue 22). Every writer's strings are valid UTF-8: bad bytes are U+FFFD.
TEST(JsonWriters, StringsAreValidUtf8WhateverTheProgramIsCalled) {
  EXPECT_EQ(json_string("a\xff"
                        "b"),
            "\"a\xEF\xBF\xBD"
            "b\"");
  EXPECT_EQ(json_string("\xc3\xa9t\xc3\xa9"), "\"\xc3\xa9t\xc3\xa9\"");                // valid UTF-8 stays as it is
  EXPECT_EQ(json_string("\xed\xa0\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");  // a surrogate is not UTF-8
  EventLog log;
  log.run.program = "/tmp/\xff\xfeprog";
  log.run.args = {"--name=\xc3("};
  const Analysis analysis = analyze(log, AnalysisOptions{});
  const ReportData data = make_report(log, analysis);
  std::ostringstream out;
  write_json(out, data);
  ReportFile read;
  std::string error;
  ASSERT_TRUE(parse_report(out.str(), "r.json", read, error)) << error;
  EXPECT_EQ(read.run.program, "/tmp/\xEF\xBF\xBD\xEF\xBF\xBDprog");
  ASSERT_EQ(read.run.args.size(), 1u);
  EXPECT_EQ(read.run.args[0], "--name=\xEF\xBF\xBD(");
}

}  // namespace
}  // namespace asynccheck::report
