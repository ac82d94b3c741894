// The SARIF writer on fabricated report data and on a committed recording. The output is parsed back (a small
// JSON reader below) so that each assertion names the SARIF property that code scanning reads. Schema validity is
// checked separately by tests/report/validate_sarif.py (ctest: report.sarif_schema).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "analysis/recording.h"
#include "report/report.h"

namespace asynccheck::report {
namespace {

// ---- a small JSON reader, enough to walk the writer's output ----

struct Value {
  enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
  bool boolean = false;
  std::string text;  // strings (decoded), numbers (as written)
  std::vector<Value> items;
  std::map<std::string, Value> members;

  bool has(const std::string& key) const { return type == Type::Object && members.count(key) != 0; }
  const Value& operator[](const std::string& key) const {
    if (!has(key)) throw std::out_of_range("no member '" + key + "'");
    return members.at(key);
  }
  const Value& operator[](size_t i) const {
    if (type != Type::Array || i >= items.size()) throw std::out_of_range("no item " + std::to_string(i));
    return items[i];
  }
  size_t size() const { return type == Type::Array ? items.size() : members.size(); }
  const std::string& str() const {
    if (type != Type::String) throw std::runtime_error("not a string");
    return text;
  }
  long long num() const {
    if (type != Type::Number) throw std::runtime_error("not a number");
    return std::stoll(text);
  }
};

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  Value document() {
    Value v = value();
    skip();
    if (pos_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  char peek() {
    skip();
    if (pos_ >= s_.size()) fail("unexpected end");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  Value value() {
    const char c = peek();
    if (c == '{') return object();
    if (c == '[') return array();
    Value v;
    if (c == '"') {
      v.type = Value::Type::String;
      v.text = string();
    } else if (literal("true")) {
      v.type = Value::Type::Bool;
      v.boolean = true;
    } else if (literal("false")) {
      v.type = Value::Type::Bool;
    } else if (literal("null")) {
      v.type = Value::Type::Null;
    } else {
      v.type = Value::Type::Number;
      const size_t start = pos_;
      while (pos_ < s_.size() && std::string_view("+-0123456789.eE").find(s_[pos_]) != std::string_view::npos) ++pos_;
      if (pos_ == start) fail("unexpected character");
      v.text = std::string(s_.substr(start, pos_ - start));
    }
    return v;
  }
  Value object() {
    Value v;
    v.type = Value::Type::Object;
    expect('{');
    if (peek() == '}') return ++pos_, v;
    for (;;) {
      if (peek() != '"') fail("expected a key");
      std::string key = string();
      expect(':');
      if (v.members.count(key)) fail("duplicate key '" + key + "'");
      v.members.emplace(std::move(key), value());
      if (peek() == '}') return ++pos_, v;
      expect(',');
    }
  }
  Value array() {
    Value v;
    v.type = Value::Type::Array;
    expect('[');
    if (peek() == ']') return ++pos_, v;
    for (;;) {
      v.items.push_back(value());
      if (peek() == ']') return ++pos_, v;
      expect(',');
    }
  }
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::string string() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      const unsigned char c = static_cast<unsigned char>(s_[pos_++]);
      if (c < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= s_.size()) fail("unfinished escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("short \\u escape");
          utf8(out, static_cast<unsigned>(std::stoul(std::string(s_.substr(pos_, 4)), nullptr, 16)));
          pos_ += 4;
          break;
        }
        default: fail("bad escape");
      }
    }
    expect('"');
    return out;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

Value parse(const std::string& text) { return Reader(text).document(); }

// ---- fabricated report data ----

Frame frame(std::string function, std::string file, int line, std::string module, uint64_t ip) {
  Frame f;
  f.ip = ip;
  f.function = std::move(function);
  f.file = std::move(file);
  f.line = line;
  f.module = std::move(module);
  return f;
}

CallSite site(std::vector<Frame> frames) {
  CallSite s;
  s.frame = frames.front();
  s.frames = std::move(frames);
  return s;
}

// Two findings: a pageable H2D copy that waited for its own copy (with a file and a stack), and a cudaFree whose
// site has no source file (only a function in a library).
struct Fixture {
  EventLog log;
  Analysis analysis;
  ReportData data;

  Fixture() {
    log.run.program = "/src/proj/build/app";
    log.run.args = {"pageable", "268435456"};
    log.run.pid = 4242;
    log.run.gpu = "NVIDIA H200";
    log.run.driver = "13000";
    log.run.threshold_ns = 100'000;
    log.api_names = {"cudaMemcpyAsync", "cudaFree"};
    log.calls.resize(2);
    log.calls[1].name = 1;
    GpuOp op;
    op.kind = GpuOpKind::Memcpy;
    op.copy_kind = 1;  // HtoD
    op.bytes = 256u << 20;
    op.start_ns = 1'000'000;
    op.end_ns = 28'490'000;
    op.stream_id = 13;
    log.ops.push_back(op);

    Finding copy;
    copy.call = 0;
    copy.rule = copy.predicted = rules::RuleId::CopyAsyncPageableH2D;
    copy.level = rules::Level::Error;
    copy.held_ns = 27'610'000;
    copy.evidence.by = ReleasedBy::OwnWork;
    copy.evidence.op = 0;
    copy.evidence.gap_ns = -13'500;
    Finding free_call;
    free_call.call = 1;
    free_call.rule = free_call.predicted = rules::RuleId::FreeWaitsForDevice;
    free_call.held_ns = 2'000'000;
    analysis.findings = {copy, free_call};
    analysis.predicted.resize(2);

    data.log = &log;
    data.analysis = &analysis;
    data.source_root = "/src/proj";
    data.rows = {copy_row(), free_row()};
  }

  static SiteRow copy_row() {
    SiteRow r;
    r.rule = rules::RuleId::CopyAsyncPageableH2D;
    r.level = rules::Level::Error;
    r.api = "cudaMemcpyAsync";
    r.site = site({frame("main", "/src/proj/app dir/main.cu", 42, "/src/proj/build/app", 0x401000),
                   frame("__libc_start_call_main", "./csu/../sysdeps/nptl/libc_start_call_main.h", 58,
                         "/lib/x86_64-linux-gnu/libc.so.6", 0x7f0000001000),
                   frame("??", "", 0, "/src/proj/build/app", 0x400100)});
    r.count = 1;
    r.total_ns = r.median_ns = r.max_ns = 27'610'000;
    r.bytes = 256u << 20;
    r.example = 0;
    r.fingerprint = "copy-async-pageable-h2d|cudaMemcpyAsync|main|main.cu";
    return r;
  }

  static SiteRow free_row() {
    SiteRow r;
    r.rule = rules::RuleId::FreeWaitsForDevice;
    r.level = rules::Level::Warning;
    r.api = "cudaFree";
    r.site = site({frame("worker(int)", "", 0, "/usr/lib/libfoo.so", 0x7f0000002000)});
    r.count = 3;
    r.total_ns = 6'000'000;
    r.median_ns = r.max_ns = 2'000'000;
    r.example = 1;
    r.fingerprint = "free-waits-for-device|cudaFree|worker(int)|libfoo.so";
    return r;
  }

  std::string sarif() const {
    std::ostringstream out;
    write_sarif(out, data);
    return out.str();
  }
  Value run() const { return parse(sarif())["runs"][0]; }
};

const Value& location_of(const Value& result) { return result["locations"][0]; }
const Value& artifact_of(const Value& result) { return location_of(result)["physicalLocation"]["artifactLocation"]; }

// ---- the log and the tool ----

TEST(Sarif, IsOneRunOfVersion210WithTheSchemaAddress) {
  Fixture fx;
  const Value log = parse(fx.sarif());
  EXPECT_EQ(log["version"].str(), "2.1.0");
  EXPECT_EQ(log["$schema"].str(), "https://json.schemastore.org/sarif-2.1.0.json");
  ASSERT_EQ(log["runs"].size(), 1u);
  const Value& driver = log["runs"][0]["tool"]["driver"];
  EXPECT_EQ(driver["name"].str(), "asynccheck");
  EXPECT_FALSE(driver.has("informationUri"));  // we have no page of our own to point at
}

// sarif.cpp hard-codes the version (no macro carries it): it must follow CMakeLists.txt's project() version.
TEST(Sarif, ToolVersionIsTheProjectVersion) {
  std::ifstream in(std::string(ASYNCCHECK_SOURCE_DIR) + "/CMakeLists.txt");
  std::stringstream cmake;
  cmake << in.rdbuf();
  std::smatch m;
  const std::string text = cmake.str();
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(project\(asynccheck\s+VERSION\s+([0-9.]+))")));
  EXPECT_EQ(Fixture().run()["tool"]["driver"]["version"].str(), m[1].str());
}

TEST(Sarif, ListsEveryCatalogRuleInCatalogOrder) {
  const Value rules_json = Fixture().run()["tool"]["driver"]["rules"];
  const auto all = rules::all_rules();
  ASSERT_EQ(rules_json.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const Value& r = rules_json[i];
    EXPECT_EQ(r["id"].str(), all[i].id);
    EXPECT_EQ(r["shortDescription"]["text"].str(), all[i].title);
    EXPECT_EQ(r["fullDescription"]["text"].str(), all[i].basis);
    EXPECT_EQ(r["helpUri"].str(), all[i].url);
    EXPECT_NE(r["help"]["text"].str().find(all[i].fix), std::string::npos) << all[i].id;
    EXPECT_NE(r["help"]["markdown"].str().find(std::string("(") + std::string(all[i].url) + ")"), std::string::npos);
    EXPECT_EQ(r["properties"]["tags"][0].str(), "cuda");
    EXPECT_EQ(r["properties"]["tags"][1].str(), "performance");
  }
}

const Value& rule_json(const Value& run, std::string_view id) {
  for (const Value& r : run["tool"]["driver"]["rules"].items) {
    if (r["id"].str() == id) return r;
  }
  throw std::out_of_range("no rule " + std::string(id));
}

TEST(Sarif, RuleNamesAreUpperCamelCaseIds) {
  const Value run = Fixture().run();
  EXPECT_EQ(rule_json(run, "copy-async-pageable-d2h")["name"].str(), "CopyAsyncPageableD2h");
  EXPECT_EQ(rule_json(run, "implicit-sync-device-alloc")["name"].str(), "ImplicitSyncDeviceAlloc");
}

TEST(Sarif, RuleLevelsMapOntoSarifLevels) {
  const Value run = Fixture().run();
  EXPECT_EQ(rule_json(run, "copy-async-pageable-d2h")["defaultConfiguration"]["level"].str(), "error");
  EXPECT_EQ(rule_json(run, "copy-sync-d2h")["defaultConfiguration"]["level"].str(), "warning");
  EXPECT_EQ(rule_json(run, "explicit-sync-device")["defaultConfiguration"]["level"].str(), "note");
  EXPECT_EQ(rule_json(run, "copy-h2d-small")["defaultConfiguration"]["level"].str(), "none");
}

// ---- results ----

TEST(Sarif, OneResultPerRowWithItsRuleIndexLevelAndProperties) {
  const Value run = Fixture().run();
  const Value& results = run["results"];
  ASSERT_EQ(results.size(), 2u);
  for (const Value& r : results.items) {
    const size_t index = static_cast<size_t>(r["ruleIndex"].num());
    EXPECT_EQ(run["tool"]["driver"]["rules"][index]["id"].str(), r["ruleId"].str());
  }
  EXPECT_EQ(results[0]["ruleId"].str(), "copy-async-pageable-h2d");
  EXPECT_EQ(results[0]["level"].str(), "error");
  EXPECT_EQ(results[1]["ruleId"].str(), "free-waits-for-device");
  EXPECT_EQ(results[1]["level"].str(), "warning");
  const Value& p = results[1]["properties"];
  EXPECT_EQ(p["count"].num(), 3);
  EXPECT_EQ(p["totalNs"].num(), 6'000'000);
  EXPECT_EQ(p["medianNs"].num(), 2'000'000);
  EXPECT_EQ(p["maxNs"].num(), 2'000'000);
  EXPECT_EQ(p["bytes"].num(), 0);
  EXPECT_EQ(p["verdict"].str(), "documented-and-observed");
  EXPECT_FALSE(p["gpuSide"].boolean);
  EXPECT_EQ(results[0]["partialFingerprints"]["asyncCheckSite/v1"].str(), Fixture::copy_row().fingerprint);
}

TEST(Sarif, MessageSaysWhatHeldTheHostWhyAndTheFix) {
  const std::string text = Fixture().run()["results"][0]["message"]["text"].str();
  EXPECT_EQ(text.rfind("cudaMemcpyAsync held the host thread 27.61 ms in total over 1 call (", 0), 0u) << text;
  EXPECT_NE(text.find("256.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("Evidence: its own memcpy HtoD 256.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("Fix: " + std::string(rules::rule(rules::RuleId::CopyAsyncPageableH2D).fix)), std::string::npos);
}

TEST(Sarif, UndocumentedBlocksSayWhatTheRulesPredictedAndTheNote) {
  Fixture fx;
  fx.data.rows[0].verdict = Verdict::ObservedUndocumented;
  fx.analysis.findings[0].predicted = rules::RuleId::CopyAsyncPinned;
  fx.analysis.findings[0].note = "the activity record says the host buffer was pinned";
  const std::string text = fx.run()["results"][0]["message"]["text"].str();
  EXPECT_NE(text.find(" Not documented: the rules predict 'copy-async-pinned' ("), std::string::npos) << text;
  EXPECT_NE(text.find(" Note: the activity record says the host buffer was pinned. Fix: "), std::string::npos) << text;
}

TEST(Sarif, GpuSideRowsReportTheGpuDelayNotHostTime) {
  Fixture fx;
  SiteRow& row = fx.data.rows[1];
  row.rule = rules::RuleId::LegacyStreamSerialization;
  row.gpu_side = true;
  fx.analysis.findings[1].rule = rules::RuleId::LegacyStreamSerialization;
  const Value r = fx.run()["results"][1];
  const std::string text = r["message"]["text"].str();
  EXPECT_NE(text.find("cudaFree held back GPU work in other streams 6.00 ms"), std::string::npos) << text;
  EXPECT_EQ(text.find("held the host thread"), std::string::npos) << text;
  EXPECT_TRUE(r["properties"]["gpuSide"].boolean);
}

TEST(Sarif, FileUnderSourceRootIsRelativeToSrcrootWithSpacesEncoded) {
  const Value run = Fixture().run();
  const Value& artifact = artifact_of(run["results"][0]);
  EXPECT_EQ(artifact["uri"].str(), "app%20dir/main.cu");
  EXPECT_EQ(artifact["uriBaseId"].str(), "SRCROOT");
  EXPECT_EQ(location_of(run["results"][0])["physicalLocation"]["region"]["startLine"].num(), 42);
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"].str(), "file:///src/proj/");
}

TEST(Sarif, SourceRootIsNormalizedBeforeComparing) {
  Fixture fx;
  fx.data.source_root = "/src/proj/build/../";
  const Value run = fx.run();
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"].str(), "file:///src/proj/");
  EXPECT_EQ(artifact_of(run["results"][0])["uri"].str(), "app%20dir/main.cu");
}

TEST(Sarif, FileOutsideSourceRootIsAnAbsoluteFileUri) {
  Fixture fx;
  fx.data.source_root = "/src/pro";  // a prefix of the path, but not a directory above it
  const Value artifact = artifact_of(fx.run()["results"][0]);
  EXPECT_EQ(artifact["uri"].str(), "file:///src/proj/app%20dir/main.cu");
  EXPECT_FALSE(artifact.has("uriBaseId"));
}

TEST(Sarif, UriCharactersThatNeedEncodingAreEncoded) {
  Fixture fx;
  fx.data.rows[0].site.frame.file = "/src/proj/odd/a#b%c?d:e [\xC3\xA9].cu";
  EXPECT_EQ(artifact_of(fx.run()["results"][0])["uri"].str(), "odd/a%23b%25c%3Fd%3Ae%20%5B%C3%A9%5D.cu");
}

TEST(Sarif, EmptySourceRootMeansTheWorkingDirectory) {
  Fixture fx;
  fx.data.source_root.clear();
  const std::string cwd = std::filesystem::current_path().string();
  fx.data.rows[0].site.frame.file = cwd + "/here.cu";
  const Value run = fx.run();
  EXPECT_EQ(artifact_of(run["results"][0])["uri"].str(), "here.cu");
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"].str().rfind("file:///", 0), 0u);
}

TEST(Sarif, NoRegionWithoutALine) {
  Fixture fx;
  fx.data.rows[0].site.frame.line = 0;
  const Value phys = location_of(fx.run()["results"][0])["physicalLocation"];
  EXPECT_TRUE(phys.has("artifactLocation"));
  EXPECT_FALSE(phys.has("region"));
}

TEST(Sarif, SiteWithoutAFileHasALogicalLocationInstead) {
  const Value loc = location_of(Fixture().run()["results"][1]);
  EXPECT_FALSE(loc.has("physicalLocation"));
  ASSERT_EQ(loc["logicalLocations"].size(), 1u);
  EXPECT_EQ(loc["logicalLocations"][0]["fullyQualifiedName"].str(), "worker(int)");
  EXPECT_EQ(loc["logicalLocations"][0]["kind"].str(), "function");
  EXPECT_NE(loc["message"]["text"].str().find("libfoo.so"), std::string::npos);
}

TEST(Sarif, SiteWithoutFileOrFunctionNamesItsModule) {
  Fixture fx;
  fx.data.rows[1].site.frame.function = "??";
  const Value logical = location_of(fx.run()["results"][1])["logicalLocations"][0];
  EXPECT_EQ(logical["kind"].str(), "module");
  EXPECT_EQ(logical["name"].str(), "libfoo.so");
  EXPECT_EQ(logical["fullyQualifiedName"].str(), "/usr/lib/libfoo.so");
}

TEST(Sarif, StackListsEveryFrameInnermostFirst) {
  const Value frames = Fixture().run()["results"][0]["stacks"][0]["frames"];
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0]["location"]["physicalLocation"]["artifactLocation"]["uri"].str(), "app%20dir/main.cu");
  EXPECT_EQ(frames[0]["location"]["physicalLocation"]["region"]["startLine"].num(), 42);
  EXPECT_EQ(frames[0]["location"]["logicalLocations"][0]["fullyQualifiedName"].str(), "main");
  EXPECT_EQ(frames[0]["module"].str(), "/src/proj/build/app");
  // A relative path from debug info: normalized, no base (we cannot know what it is relative to).
  const Value& libc = frames[1]["location"]["physicalLocation"]["artifactLocation"];
  EXPECT_EQ(libc["uri"].str(), "sysdeps/nptl/libc_start_call_main.h");
  EXPECT_FALSE(libc.has("uriBaseId"));
  // No symbols: only the module.
  EXPECT_FALSE(frames[2].has("location"));
  EXPECT_EQ(frames[2]["module"].str(), "/src/proj/build/app");
}

TEST(Sarif, BaselineStateOnlyWithABaseline) {
  Fixture fx;
  const Value plain = fx.run();
  for (const Value& r : plain["results"].items) EXPECT_FALSE(r.has("baselineState"));
  fx.data.baseline = "ci/asynccheck.baseline";
  fx.data.rows[0].in_baseline = true;
  const Value run = fx.run();
  EXPECT_EQ(run["results"][0]["baselineState"].str(), "unchanged");
  EXPECT_EQ(run["results"][1]["baselineState"].str(), "new");
  EXPECT_EQ(run["properties"]["baseline"].str(), "ci/asynccheck.baseline");
}

TEST(Sarif, SuppressedRowsAreResultsWithAnExternalSuppression) {
  Fixture fx;
  fx.data.suppressed = {fx.data.rows[1]};
  fx.data.rows.pop_back();
  fx.data.suppressions = {{"copy-sync-d2h", "nothing*", "asynccheck.supp:1", 0, 0},
                          {"free-waits-for-device", "cudaFree", "asynccheck.supp:2", 1, 3}};
  const Value run = fx.run();
  ASSERT_EQ(run["results"].size(), 2u);
  EXPECT_FALSE(run["results"][0].has("suppressions"));
  const Value& s = run["results"][1]["suppressions"];
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0]["kind"].str(), "external");
  EXPECT_EQ(s[0]["justification"].str(), "free-waits-for-device:cudaFree from asynccheck.supp:2");
  // Hit counts, the unused suppression included.
  const Value& uses = run["properties"]["suppressions"];
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[0]["sites"].num(), 0);
  EXPECT_EQ(uses[1]["origin"].str(), "asynccheck.supp:2");
  EXPECT_EQ(uses[1]["calls"].num(), 3);
}

TEST(Sarif, NvtxRangesAreResultPropertiesAndInTheMessage) {
  Fixture fx;
  fx.log.nvtx_ranges = {{"", "forward"}, {"my lib", "backward"}};
  fx.data.rows[1].nvtx = {{2, 2}, {1, 1}};
  const Value run = fx.run();
  EXPECT_FALSE(run["results"][0]["properties"].has("nvtxRange"));  // a row without ranges: no property
  const Value& p = run["results"][1]["properties"];
  EXPECT_EQ(p["nvtxRange"].str(), "backward");
  ASSERT_EQ(p["nvtxRanges"].size(), 2u);
  EXPECT_EQ(p["nvtxRanges"][0]["name"].str(), "backward");
  EXPECT_EQ(p["nvtxRanges"][0]["domain"].str(), "my lib");
  EXPECT_EQ(p["nvtxRanges"][0]["count"].num(), 2);
  EXPECT_EQ(p["nvtxRanges"][1]["name"].str(), "forward");
  EXPECT_EQ(p["nvtxRanges"][1]["domain"].str(), "");
  const std::string& text = run["results"][1]["message"]["text"].str();
  EXPECT_NE(text.find(" In NVTX range \"backward\" (domain \"my lib\") for 2 of 3 calls, \"forward\" for 1."),
            std::string::npos)
      << text;
}

TEST(Sarif, OutputIsDeterministic) {
  Fixture a;
  Fixture b;
  EXPECT_EQ(a.sarif(), a.sarif());
  EXPECT_EQ(a.sarif(), b.sarif());
}

TEST(Sarif, OddCharactersInNamesAreEscaped) {
  Fixture fx;
  const std::string odd = "op\"<T>\\n(\x01\t)\n\xC3\xA9";
  fx.data.rows[1].site.frames[0].function = odd;
  fx.data.rows[1].site.frame.function = odd;
  fx.data.rows[1].api = "cuda\"Free\\";
  const std::string text = fx.sarif();
  const Value run = parse(text);  // throws on a raw control character or a bad escape
  EXPECT_EQ(location_of(run["runs"][0]["results"][1])["logicalLocations"][0]["fullyQualifiedName"].str(), odd);
  EXPECT_EQ(run["runs"][0]["results"][1]["properties"]["api"].str(), "cuda\"Free\\");
}

// ---- the invocation ----

TEST(Sarif, InvocationDescribesTheRunWithoutNotificationsWhenClean) {
  const Value inv = Fixture().run()["invocations"][0];
  EXPECT_TRUE(inv["executionSuccessful"].boolean);
  EXPECT_EQ(inv["toolExecutionNotifications"].size(), 0u);
  const Value& p = inv["properties"];
  EXPECT_EQ(p["gpu"].str(), "NVIDIA H200");
  EXPECT_EQ(p["driver"].str(), "13000");
  EXPECT_EQ(p["pid"].num(), 4242);
  EXPECT_EQ(p["program"].str(), "/src/proj/build/app");
  EXPECT_EQ(p["args"][1].str(), "268435456");
  EXPECT_EQ(p["thresholdNs"].num(), 100'000);
}

TEST(Sarif, WhatTheRunMissedIsAToolWarning) {
  Fixture fx;
  fx.log.run.monitoring = "off: another CUPTI subscriber";
  fx.log.run.complete = false;
  fx.log.run.dropped_records = 17;
  const Value notes = fx.run()["invocations"][0]["toolExecutionNotifications"];
  ASSERT_EQ(notes.size(), 3u);
  for (const Value& n : notes.items) EXPECT_EQ(n["level"].str(), "warning");
  EXPECT_NE(notes[0]["message"]["text"].str().find("off: another CUPTI subscriber"), std::string::npos);
  EXPECT_NE(notes[1]["message"]["text"].str().find("incomplete"), std::string::npos);
  EXPECT_NE(notes[2]["message"]["text"].str().find("17 activity records"), std::string::npos);
}

TEST(Sarif, SiteWithoutAStackSaysSo) {
  Fixture fx;
  fx.data.rows[1].site = CallSite{};
  const Value run = fx.run();
  const Value& r = run["results"][1];
  EXPECT_FALSE(r.has("stacks"));
  const Value& loc = location_of(r);
  EXPECT_FALSE(loc.has("physicalLocation"));
  EXPECT_FALSE(loc.has("logicalLocations"));
  EXPECT_EQ(loc["message"]["text"].str(), "call site unknown: no stack captured");
}

// ---- files for the schema check (report.sarif_schema validates what these write) ----

// Written beside and renamed into place: ctest -j may run a test that writes the file while the validator reads it.
void write_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::ofstream(tmp, std::ios::trunc) << text;
  std::filesystem::rename(tmp, path);
  ASSERT_EQ(std::filesystem::file_size(path), text.size()) << path;
}

// Every optional part of the writer at once: a baseline, a suppressed site, a GPU-side row, a site without a file
// or a function, a site without a stack, odd characters, and every tool notification.
TEST(SarifFiles, FabricatedRunWithEveryOptionalPart) {
  Fixture fx;
  fx.log.run.monitoring = "off: test";
  fx.log.run.complete = false;
  fx.log.run.dropped_records = 3;
  fx.data.baseline = "asynccheck.baseline";
  fx.data.rows[0].in_baseline = true;
  fx.data.rows[0].site.frame.file = "/src/proj/odd/a#b%c?d:e [\xC3\xA9].cu";
  fx.data.rows[0].site.frame.function = "op\"<T>\\n(\x01\t)";
  fx.data.rows[0].site.frame.line = 0;
  SiteRow gpu = Fixture::free_row();
  gpu.rule = rules::RuleId::LegacyStreamSerialization;
  gpu.gpu_side = true;
  gpu.site.frame.function = "??";
  gpu.site.frames[0].function = "??";
  SiteRow nowhere = Fixture::free_row();
  nowhere.site = CallSite{};
  fx.data.rows.push_back(gpu);
  fx.data.rows.push_back(nowhere);
  fx.data.suppressed = {Fixture::free_row()};
  fx.data.suppressions = {{"free-waits-for-device", "cudaFree", "asynccheck.supp:2", 1, 3}};
  fx.log.nvtx_ranges = {{"", "forward"}, {"my lib", "copy \"x\""}};
  fx.data.rows[0].nvtx = {{2, 1}};
  fx.data.rows[1].nvtx = {{1, 2}, {2, 1}};
  const std::string text = fx.sarif();
  EXPECT_EQ(parse(text)["runs"][0]["results"].size(), 5u);
  write_text(std::string(ASYNCCHECK_BINARY_DIR) + "/fabricated.sarif", text);
}

// ---- a committed recording ----

// seed000_answer with pageable buffers (samples/seed000_answer/expect.txt): both copies are reported at their lines.
// The SARIF is also left for report.sarif_schema, which validates it against the official schema.
TEST(SarifFiles, RecordedPageableRunNamesBothCopiesAtTheirLines) {
  const std::string rec = std::string(ASYNCCHECK_SOURCE_DIR) + "/tests/fixtures/recordings/seed000_answer.pageable.rec";
  std::ifstream in(rec);
  ASSERT_TRUE(in) << rec;
  EventLog log;
  std::string error;
  ASSERT_TRUE(read_recording(in, log, error)) << rec << ": " << error;
  AnalysisOptions options;
  options.threshold_ns = log.run.threshold_ns;
  const Analysis analysis = analyze(log, options);
  ReportData data = make_report(log, analysis);
  // The recording names files as they were on the GPU machine: its checkout is the source root.
  const std::string source = "samples/seed000_answer/seed000_answer.cu";
  ASSERT_FALSE(data.rows.empty());
  const std::string& file = data.rows[0].site.frame.file;
  ASSERT_TRUE(file.size() > source.size() && file.compare(file.size() - source.size(), source.size(), source) == 0)
      << file;
  data.source_root = file.substr(0, file.size() - source.size());

  std::ostringstream out;
  write_sarif(out, data);
  const std::string path = std::string(ASYNCCHECK_BINARY_DIR) + "/seed000_answer.pageable.sarif";
  write_text(path, out.str());

  std::map<std::string, long long> lines;  // rule -> line
  const Value log_json = parse(out.str());
  for (const Value& r : log_json["runs"][0]["results"].items) {
    const Value& phys = location_of(r)["physicalLocation"];
    if (phys["artifactLocation"]["uri"].str() != source) continue;
    EXPECT_EQ(phys["artifactLocation"]["uriBaseId"].str(), "SRCROOT");
    lines[r["ruleId"].str()] = phys["region"]["startLine"].num();
  }
  EXPECT_EQ(lines["copy-async-pageable-h2d"], 79);
  EXPECT_EQ(lines["copy-async-pageable-d2h"], 88);
}

}  // namespace
}  // namespace asynccheck::report
