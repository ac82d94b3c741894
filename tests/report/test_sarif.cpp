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
#include "report/json_value.h"
#include "report/report.h"
#include "report/source_root.h"

namespace asynccheck::report {
namespace {

// ---- the writer's output, read back with the project's strict JSON reader ----

using Value = JsonValue;

// Throws on anything that is not strict JSON, so that a test fails naming the place.
Value parse(const std::string& text) {
  Value v;
  std::string error;
  if (!parse_json(text, v, error)) throw std::runtime_error("JSON: " + error);
  return v;
}

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
    copy.held_ns = copy.waited_ns = 27'610'000;  // the copy ended 13.5 us after it returned
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
    r.waited_ns = 27'500'000;
    r.own_ns = 110'000;
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

  // The rows' examples described from the findings as they are now (tests change them), as aggregate() would.
  std::string sarif() const {
    ReportData d = data;
    d.run = log.run;
    for (std::vector<SiteRow>* rows : {&d.rows, &d.suppressed}) {
      for (SiteRow& r : *rows) r.shown = describe_finding(log, analysis.findings[r.example]);
    }
    std::ostringstream out;
    write_sarif(out, d);
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
  EXPECT_EQ(log["version"].string(), "2.1.0");
  EXPECT_EQ(log["$schema"].string(), "https://json.schemastore.org/sarif-2.1.0.json");
  ASSERT_EQ(log["runs"].size(), 1u);
  const Value& driver = log["runs"][0]["tool"]["driver"];
  EXPECT_EQ(driver["name"].string(), "asynccheck");
}

// SARIF 3.19.17: informationUri is an absolute URI. asynccheck has no web home: by default it is the README that
// `cmake --install` puts in the doc directory, unless the configure step was given ASYNCCHECK_HOMEPAGE_URL.
TEST(Sarif, InformationUriIsTheConfiguredHomePage) {
  const std::string uri = Fixture().run()["tool"]["driver"]["informationUri"].string();
  EXPECT_TRUE(std::regex_match(uri, std::regex("[A-Za-z][A-Za-z0-9+.-]*:[^ ]+"))) << uri;
  const std::string override_url = ASYNCCHECK_HOMEPAGE_OVERRIDE;
  if (!override_url.empty()) {
    EXPECT_EQ(uri, override_url);
    return;
  }
  EXPECT_EQ(uri, "file://" + std::string(ASYNCCHECK_INSTALL_DOCDIR) + "/README.md");
  // ...which is where the install rule puts the README.
  std::ifstream in(std::string(ASYNCCHECK_SOURCE_DIR) + "/CMakeLists.txt");
  std::stringstream cmake;
  cmake << in.rdbuf();
  EXPECT_NE(cmake.str().find("install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})"), std::string::npos);
}

// Rules point at NVIDIA's pages (rules.def), absolute https addresses: a viewer can open them whatever the home page.
TEST(Sarif, RuleHelpUrisAreAbsolute) {
  const Value run = Fixture().run();
  for (const Value& r : run["tool"]["driver"]["rules"].items())
    EXPECT_TRUE(r["helpUri"].string().starts_with("https://")) << r["id"].string() << ": " << r["helpUri"].string();
}

// sarif.cpp hard-codes the version (no macro carries it): it must follow CMakeLists.txt's project() version.
TEST(Sarif, ToolVersionIsTheProjectVersion) {
  std::ifstream in(std::string(ASYNCCHECK_SOURCE_DIR) + "/CMakeLists.txt");
  std::stringstream cmake;
  cmake << in.rdbuf();
  std::smatch m;
  const std::string text = cmake.str();
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(project\(asynccheck\s+VERSION\s+([0-9.]+))")));
  EXPECT_EQ(Fixture().run()["tool"]["driver"]["version"].string(), m[1].str());
}

TEST(Sarif, ListsEveryCatalogRuleInCatalogOrder) {
  const Value rules_json = Fixture().run()["tool"]["driver"]["rules"];
  const auto all = rules::all_rules();
  ASSERT_EQ(rules_json.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const Value& r = rules_json[i];
    EXPECT_EQ(r["id"].string(), all[i].id);
    EXPECT_EQ(r["shortDescription"]["text"].string(), all[i].title);
    EXPECT_EQ(r["fullDescription"]["text"].string(), all[i].basis);
    EXPECT_EQ(r["helpUri"].string(), all[i].url);
    EXPECT_NE(r["help"]["text"].string().find(all[i].fix), std::string::npos) << all[i].id;
    EXPECT_NE(r["help"]["markdown"].string().find(std::string("(") + std::string(all[i].url) + ")"), std::string::npos);
    EXPECT_EQ(r["properties"]["tags"][0].string(), "cuda");
    EXPECT_EQ(r["properties"]["tags"][1].string(), "performance");
  }
}

const Value& rule_json(const Value& run, std::string_view id) {
  for (const Value& r : run["tool"]["driver"]["rules"].items()) {
    if (r["id"].string() == id) return r;
  }
  throw std::out_of_range("no rule " + std::string(id));
}

TEST(Sarif, RuleNamesAreUpperCamelCaseIds) {
  const Value run = Fixture().run();
  EXPECT_EQ(rule_json(run, "copy-async-pageable-d2h")["name"].string(), "CopyAsyncPageableD2h");
  EXPECT_EQ(rule_json(run, "implicit-sync-device-alloc")["name"].string(), "ImplicitSyncDeviceAlloc");
}

TEST(Sarif, RuleLevelsMapOntoSarifLevels) {
  const Value run = Fixture().run();
  EXPECT_EQ(rule_json(run, "copy-async-pageable-d2h")["defaultConfiguration"]["level"].string(), "error");
  EXPECT_EQ(rule_json(run, "copy-sync-d2h")["defaultConfiguration"]["level"].string(), "warning");
  EXPECT_EQ(rule_json(run, "explicit-sync-device")["defaultConfiguration"]["level"].string(), "note");
  EXPECT_EQ(rule_json(run, "copy-h2d-small")["defaultConfiguration"]["level"].string(), "none");
}

// ---- results ----

TEST(Sarif, OneResultPerRowWithItsRuleIndexLevelAndProperties) {
  const Value run = Fixture().run();
  const Value& results = run["results"];
  ASSERT_EQ(results.size(), 2u);
  for (const Value& r : results.items()) {
    const size_t index = static_cast<size_t>(r["ruleIndex"].int64().value());
    EXPECT_EQ(run["tool"]["driver"]["rules"][index]["id"].string(), r["ruleId"].string());
  }
  EXPECT_EQ(results[0]["ruleId"].string(), "copy-async-pageable-h2d");
  EXPECT_EQ(results[0]["level"].string(), "error");
  EXPECT_EQ(results[1]["ruleId"].string(), "free-waits-for-device");
  EXPECT_EQ(results[1]["level"].string(), "warning");
  const Value& p = results[1]["properties"];
  EXPECT_EQ(p["count"].int64().value(), 3);
  EXPECT_EQ(p["totalNs"].int64().value(), 6'000'000);
  EXPECT_EQ(p["medianNs"].int64().value(), 2'000'000);
  EXPECT_EQ(p["maxNs"].int64().value(), 2'000'000);
  EXPECT_EQ(p["bytes"].int64().value(), 0);
  EXPECT_EQ(p["verdict"].string(), "documented-and-observed");
  EXPECT_FALSE(p["gpuSide"].boolean());
  EXPECT_EQ(results[0]["partialFingerprints"]["asyncCheckSite/v1"].string(), Fixture::copy_row().fingerprint);
}

TEST(Sarif, MessageSaysWhatHeldTheHostWhyAndTheFix) {
  const std::string text = Fixture().run()["results"][0]["message"]["text"].string();
  EXPECT_EQ(text.rfind("cudaMemcpyAsync held the host thread 27.61 ms in total over 1 call (", 0), 0u) << text;
  EXPECT_NE(text.find("256.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("waited 27.50 ms for GPU work, 110.0 us own cost"), std::string::npos) << text;
  EXPECT_NE(text.find("Evidence: waited 27.61 ms for its own memcpy HtoD 256.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("Fix: " + std::string(rules::rule(rules::RuleId::CopyAsyncPageableH2D).fix)), std::string::npos);
}

TEST(Sarif, UndocumentedBlocksSayWhatTheRulesPredictedAndTheNote) {
  Fixture fx;
  fx.data.rows[0].verdict = Verdict::ObservedUndocumented;
  fx.analysis.findings[0].predicted = rules::RuleId::CopyAsyncPinned;
  fx.analysis.findings[0].note = "the activity record says the host buffer was pinned";
  const std::string text = fx.run()["results"][0]["message"]["text"].string();
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
  const std::string text = r["message"]["text"].string();
  EXPECT_NE(text.find("cudaFree held back GPU work in other streams 6.00 ms"), std::string::npos) << text;
  EXPECT_EQ(text.find("held the host thread"), std::string::npos) << text;
  EXPECT_TRUE(r["properties"]["gpuSide"].boolean());
}

TEST(Sarif, FileUnderSourceRootIsRelativeToSrcrootWithSpacesEncoded) {
  const Value run = Fixture().run();
  const Value& artifact = artifact_of(run["results"][0]);
  EXPECT_EQ(artifact["uri"].string(), "app%20dir/main.cu");
  EXPECT_EQ(artifact["uriBaseId"].string(), "SRCROOT");
  EXPECT_EQ(location_of(run["results"][0])["physicalLocation"]["region"]["startLine"].int64().value(), 42);
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"].string(), "file:///src/proj/");
}

TEST(Sarif, SourceRootIsNormalizedBeforeComparing) {
  Fixture fx;
  fx.data.source_root = "/src/proj/build/../";
  const Value run = fx.run();
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"].string(), "file:///src/proj/");
  EXPECT_EQ(artifact_of(run["results"][0])["uri"].string(), "app%20dir/main.cu");
}

TEST(Sarif, FileOutsideSourceRootIsAnAbsoluteFileUri) {
  Fixture fx;
  fx.data.source_root = "/src/pro";  // a prefix of the path, but not a directory above it
  const Value artifact = artifact_of(fx.run()["results"][0]);
  EXPECT_EQ(artifact["uri"].string(), "file:///src/proj/app%20dir/main.cu");
  EXPECT_FALSE(artifact.has("uriBaseId"));
}

// --source-root (issue 21): a report made in build/, or on another machine, names the checkout's files relative to
// its root in every format: SARIF against %SRCROOT%, JSON and the summary as relative paths.
TEST(SourceRoot, GivenItMapsFilesOntoTheCheckoutInEveryFormat) {
  Fixture fx;
  const std::filesystem::path root = std::filesystem::temp_directory_path() / "asynccheck-srcroot-test";
  std::filesystem::create_directories(root / "app dir");
  set_source_root(fx.data, root.string() + "/./");
  EXPECT_EQ(fx.data.shown_root, root.string());
  fx.data.rows[0].site.frame.file = root.string() + "/app dir/../app dir/main.cu";
  fx.data.rows[0].site.frames[0].file = fx.data.rows[0].site.frame.file;
  const Value run = fx.run();
  const Value& artifact = artifact_of(run["results"][0]);
  EXPECT_EQ(artifact["uri"].string(), "app%20dir/main.cu");
  EXPECT_EQ(artifact["uriBaseId"].string(), "SRCROOT");
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"].string(), "file://" + root.string() + "/");
  std::ostringstream json;
  write_json(json, fx.data);
  const Value sites = parse(json.str())["sites"];
  EXPECT_EQ(sites[0]["location"]["file"].string(), "app dir/main.cu");
  EXPECT_EQ(sites[0]["stack"][0]["file"].string(), "app dir/main.cu");
  EXPECT_EQ(sites[0]["stack"][1]["file"].string(), "./csu/../sysdeps/nptl/libc_start_call_main.h");  // not under it
  std::ostringstream summary;
  write_summary(summary, fx.data, 0);
  EXPECT_NE(summary.str().find(" at app dir/main.cu:42"), std::string::npos) << summary.str();
  // A relative file in the debug information is relative to nothing known: no base, root or not.
  const Value frames = run["results"][0]["stacks"][0]["frames"];
  ASSERT_GE(frames.size(), 2u);
  EXPECT_FALSE(frames[1]["location"]["physicalLocation"]["artifactLocation"].has("uriBaseId"));
  std::filesystem::remove_all(root);
}

TEST(SourceRoot, NotGivenJsonAndTheSummaryKeepTheRecordedPath) {
  Fixture fx;  // source_root "/src/proj" for SARIF, as the working directory would be
  std::ostringstream json;
  write_json(json, fx.data);
  EXPECT_EQ(parse(json.str())["sites"][0]["location"]["file"].string(), "/src/proj/app dir/main.cu");
  std::ostringstream summary;
  write_summary(summary, fx.data, 0);
  EXPECT_NE(summary.str().find(" at main.cu:42"), std::string::npos) << summary.str();
  fx.data.rows[0].site.frame.file = "rel/main.cu";  // debug info without its directory: relative to nothing known
  EXPECT_FALSE(artifact_of(fx.run()["results"][0]).has("uriBaseId"));
}

TEST(SourceRoot, OnlyFilesUnderTheRootAreShownRelative) {
  EXPECT_EQ(shown_file("/src/proj/a.cu", ""), "/src/proj/a.cu");  // no root given: as recorded
  EXPECT_EQ(shown_file("/src/proj/sub/../a.cu", "/src/proj"), "a.cu");
  EXPECT_EQ(shown_file("/src/project/a.cu", "/src/proj"), "/src/project/a.cu");  // a prefix, not a directory above
  EXPECT_EQ(shown_file("rel/a.cu", "/src/proj"), "rel/a.cu");
  EXPECT_EQ(shown_file("/src/a.cu", "/"), "src/a.cu");
  ReportData data;
  set_source_root(data, "");
  EXPECT_TRUE(data.shown_root.empty());
}

TEST(Sarif, UriCharactersThatNeedEncodingAreEncoded) {
  Fixture fx;
  fx.data.rows[0].site.frame.file = "/src/proj/odd/a#b%c?d:e [\xC3\xA9].cu";
  EXPECT_EQ(artifact_of(fx.run()["results"][0])["uri"].string(), "odd/a%23b%25c%3Fd%3Ae%20%5B%C3%A9%5D.cu");
}

TEST(Sarif, EmptySourceRootMeansTheWorkingDirectory) {
  Fixture fx;
  fx.data.source_root.clear();
  const std::string cwd = std::filesystem::current_path().string();
  fx.data.rows[0].site.frame.file = cwd + "/here.cu";
  const Value run = fx.run();
  EXPECT_EQ(artifact_of(run["results"][0])["uri"].string(), "here.cu");
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"].string().rfind("file:///", 0), 0u);
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
  EXPECT_EQ(loc["logicalLocations"][0]["fullyQualifiedName"].string(), "worker(int)");
  EXPECT_EQ(loc["logicalLocations"][0]["kind"].string(), "function");
  EXPECT_NE(loc["message"]["text"].string().find("libfoo.so"), std::string::npos);
}

TEST(Sarif, SiteWithoutFileOrFunctionNamesItsModule) {
  Fixture fx;
  fx.data.rows[1].site.frame.function = "??";
  const Value logical = location_of(fx.run()["results"][1])["logicalLocations"][0];
  EXPECT_EQ(logical["kind"].string(), "module");
  EXPECT_EQ(logical["name"].string(), "libfoo.so");
  EXPECT_EQ(logical["fullyQualifiedName"].string(), "/usr/lib/libfoo.so");
}

TEST(Sarif, StackListsEveryFrameInnermostFirst) {
  const Value frames = Fixture().run()["results"][0]["stacks"][0]["frames"];
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0]["location"]["physicalLocation"]["artifactLocation"]["uri"].string(), "app%20dir/main.cu");
  EXPECT_EQ(frames[0]["location"]["physicalLocation"]["region"]["startLine"].int64().value(), 42);
  EXPECT_EQ(frames[0]["location"]["logicalLocations"][0]["fullyQualifiedName"].string(), "main");
  EXPECT_EQ(frames[0]["module"].string(), "/src/proj/build/app");
  // A relative path from debug info: normalized, no base (we cannot know what it is relative to).
  const Value& libc = frames[1]["location"]["physicalLocation"]["artifactLocation"];
  EXPECT_EQ(libc["uri"].string(), "sysdeps/nptl/libc_start_call_main.h");
  EXPECT_FALSE(libc.has("uriBaseId"));
  // No symbols: only the module.
  EXPECT_FALSE(frames[2].has("location"));
  EXPECT_EQ(frames[2]["module"].string(), "/src/proj/build/app");
}

TEST(Sarif, BaselineStateOnlyWithABaseline) {
  Fixture fx;
  const Value plain = fx.run();
  for (const Value& r : plain["results"].items()) EXPECT_FALSE(r.has("baselineState"));
  fx.data.baseline = "ci/asynccheck.baseline";
  fx.data.rows[0].in_baseline = true;
  const Value run = fx.run();
  EXPECT_EQ(run["results"][0]["baselineState"].string(), "unchanged");
  EXPECT_EQ(run["results"][1]["baselineState"].string(), "new");
  EXPECT_EQ(run["properties"]["baseline"].string(), "ci/asynccheck.baseline");
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
  EXPECT_EQ(s[0]["kind"].string(), "external");
  EXPECT_EQ(s[0]["justification"].string(), "free-waits-for-device:cudaFree from asynccheck.supp:2");
  // Hit counts, the unused suppression included.
  const Value& uses = run["properties"]["suppressions"];
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[0]["sites"].int64().value(), 0);
  EXPECT_EQ(uses[1]["origin"].string(), "asynccheck.supp:2");
  EXPECT_EQ(uses[1]["calls"].int64().value(), 3);
}

TEST(Sarif, NvtxRangesAreResultPropertiesAndInTheMessage) {
  Fixture fx;
  fx.data.rows[1].nvtx = {{"backward", "my lib", 2}, {"forward", "", 1}};
  const Value run = fx.run();
  EXPECT_FALSE(run["results"][0]["properties"].has("nvtxRange"));  // a row without ranges: no property
  const Value& p = run["results"][1]["properties"];
  EXPECT_EQ(p["nvtxRange"].string(), "backward");
  ASSERT_EQ(p["nvtxRanges"].size(), 2u);
  EXPECT_EQ(p["nvtxRanges"][0]["name"].string(), "backward");
  EXPECT_EQ(p["nvtxRanges"][0]["domain"].string(), "my lib");
  EXPECT_EQ(p["nvtxRanges"][0]["count"].int64().value(), 2);
  EXPECT_EQ(p["nvtxRanges"][1]["name"].string(), "forward");
  EXPECT_EQ(p["nvtxRanges"][1]["domain"].string(), "");
  const std::string& text = run["results"][1]["message"]["text"].string();
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
  EXPECT_EQ(location_of(run["runs"][0]["results"][1])["logicalLocations"][0]["fullyQualifiedName"].string(), odd);
  EXPECT_EQ(run["runs"][0]["results"][1]["properties"]["api"].string(), "cuda\"Free\\");
}

// ---- the invocation ----

TEST(Sarif, InvocationDescribesTheRunWithoutNotificationsWhenClean) {
  const Value inv = Fixture().run()["invocations"][0];
  EXPECT_TRUE(inv["executionSuccessful"].boolean());
  EXPECT_EQ(inv["toolExecutionNotifications"].size(), 0u);
  const Value& p = inv["properties"];
  EXPECT_EQ(p["gpu"].string(), "NVIDIA H200");
  EXPECT_EQ(p["driver"].string(), "13000");
  EXPECT_EQ(p["pid"].int64().value(), 4242);
  EXPECT_EQ(p["program"].string(), "/src/proj/build/app");
  EXPECT_EQ(p["args"][1].string(), "268435456");
  EXPECT_EQ(p["thresholdNs"].int64().value(), 100'000);
}

// A run that watched something but missed part of it succeeded, with warnings; one whose monitoring was off did not
// succeed (issue 21: code scanning took "nothing watched" for a clean run), with an error saying why.
TEST(Sarif, WhatTheRunMissedIsAToolWarning) {
  Fixture fx;
  fx.log.run.complete = false;
  fx.log.run.dropped_records = 17;
  Value inv = fx.run()["invocations"][0];
  EXPECT_TRUE(inv["executionSuccessful"].boolean());
  Value notes = inv["toolExecutionNotifications"];
  ASSERT_EQ(notes.size(), 2u);
  for (const Value& n : notes.items()) EXPECT_EQ(n["level"].string(), "warning");
  EXPECT_NE(notes[0]["message"]["text"].string().find("incomplete"), std::string::npos);
  EXPECT_NE(notes[1]["message"]["text"].string().find("17 activity records were DROPPED"), std::string::npos);
  fx.log.run.dropped_records = 1;
  notes = fx.run()["invocations"][0]["toolExecutionNotifications"];
  EXPECT_NE(notes[1]["message"]["text"].string().find("1 activity record was DROPPED"), std::string::npos);

  fx.log.run.monitoring = "off: another CUPTI subscriber";
  inv = fx.run()["invocations"][0];
  EXPECT_FALSE(inv["executionSuccessful"].boolean());
  notes = inv["toolExecutionNotifications"];
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0]["level"].string(), "error");
  EXPECT_EQ(notes[0]["message"]["text"].string(), "monitoring was off: another CUPTI subscriber; nothing was watched");
}

// Calls counted without analysis (the compact_backlog limit, analysis/feed.h) are said in every format.
TEST(Sarif, UnanalyzedCallsAreSaidInEveryFormat) {
  Fixture fx;
  EXPECT_EQ(fx.run()["invocations"][0]["toolExecutionNotifications"].size(), 0u);
  EXPECT_FALSE(fx.run()["invocations"][0]["properties"].has("unanalyzedCalls"));
  fx.log.run.unanalyzed_calls = 1234;
  const Value inv = fx.run()["invocations"][0];
  ASSERT_EQ(inv["toolExecutionNotifications"].size(), 1u);
  EXPECT_NE(
      inv["toolExecutionNotifications"][0]["message"]["text"].string().find("1234 ordinary calls were counted but "
                                                                            "not analyzed"),
      std::string::npos);
  EXPECT_EQ(inv["properties"]["unanalyzedCalls"].int64().value(), 1234);
  std::ostringstream json, summary;
  fx.data.run = fx.log.run;  // as make_report copies it
  write_json(json, fx.data);
  EXPECT_EQ(parse(json.str())["run"]["unanalyzed_calls"].int64().value(), 1234);
  write_summary(summary, fx.data, 0);
  EXPECT_NE(summary.str().find("; 1234 ordinary calls counted but NOT ANALYZED"), std::string::npos) << summary.str();
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
  EXPECT_EQ(loc["message"]["text"].string(), "call site unknown: no stack captured");
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
  fx.log.run.unanalyzed_calls = 5;
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
  fx.data.rows[0].nvtx = {{"copy \"x\"", "my lib", 1}};
  fx.data.rows[1].nvtx = {{"forward", "", 2}, {"copy \"x\"", "my lib", 1}};
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
  for (const Value& r : log_json["runs"][0]["results"].items()) {
    const Value& phys = location_of(r)["physicalLocation"];
    if (phys["artifactLocation"]["uri"].string() != source) continue;
    EXPECT_EQ(phys["artifactLocation"]["uriBaseId"].string(), "SRCROOT");
    lines[r["ruleId"].string()] = phys["region"]["startLine"].int64().value();
  }
  EXPECT_EQ(lines["copy-async-pageable-h2d"], 79);
  EXPECT_EQ(lines["copy-async-pageable-d2h"], 88);
}

}  // namespace
}  // namespace asynccheck::report
