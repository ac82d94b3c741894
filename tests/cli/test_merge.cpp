// Many processes, no GPU: reports named by rank (%r from the launchers' variables, through the command, raw
// LD_PRELOAD and recordings), and `asynccheck merge` on real reports of the committed recordings: exact sums,
// every site kept, provenance, merges of merges, the exit-code options, and a precise error for each bad input.
#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "command.h"
#include "report/json_value.h"

using namespace asynccheck::testing;
using asynccheck::report::JsonValue;

namespace {

const fs::path kRecordings = kSource / "tests/fixtures/recordings";

std::vector<fs::path> recordings() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kRecordings)) {
    if (e.path().extension() == ".rec") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

JsonValue read_json(const fs::path& p) {
  JsonValue v;
  std::string error;
  EXPECT_TRUE(asynccheck::report::parse_json(slurp(p), v, error)) << p << ": " << error;
  return v;
}

uint64_t u(const JsonValue& v) { return v.uint64().value_or(UINT64_MAX); }

// What identifies a site, as docs/mpi.md says: rule, API, function, and the source file's base name with the line
// (or, without line information, the module's base name and the offset). The same source line in two programs
// built from it is one site.
using Key = std::tuple<std::string, std::string, std::string, std::string>;
Key key_of(const JsonValue& site) {
  const JsonValue& l = site["location"];
  const std::string where =
      !l["file"].string().empty() && u(l["line"]) > 0
          ? fs::path(l["file"].string()).filename().string() + ":" + std::to_string(u(l["line"]))
          : fs::path(l["module"].string()).filename().string() + "+" + std::to_string(u(l["offset"]));
  return {site["rule"].string(), site["api"].string(), l["function"].string(), where};
}

// "line:col" of the first occurrence of `needle` in `text`, plus `shift` bytes.
std::string where(const std::string& text, const std::string& needle, size_t shift = 0) {
  const size_t at = text.find(needle) + shift;
  const size_t line = static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n')) + 1;
  const size_t start = text.rfind('\n', at - 1);
  return std::to_string(line) + ":" + std::to_string(start == std::string::npos ? at + 1 : at - start);
}

class Merge : public Cli {
 protected:
  // The JSON report of a committed recording, as `asynccheck analyze` writes it.
  fs::path report_of(const fs::path& recording, const std::string& name, std::vector<std::string> extra = {}) {
    const fs::path out = dir_ / name;
    std::vector<std::string> args = {"analyze", recording.string(), "--json=" + out.string(), "--summary=0"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = asynccheck(args);
    EXPECT_EQ(r.code(), 0) << r.err;
    return out;
  }
  // A copy of `recording` as another process recorded it (pid + 1): two runs of one program, not one report twice.
  fs::path another_run(const fs::path& recording) {
    std::string text = slurp(recording);
    const size_t at = text.find(" pid=", text.find("\nrun ")) + 5;
    const size_t end = text.find(' ', at);
    text.replace(at, end - at, std::to_string(std::stoll(text.substr(at, end - at)) + 1));
    const fs::path out = dir_ / (recording.stem().string() + ".another.rec");
    std::ofstream(out) << text;
    return out;
  }
  // A copy of `recording` whose process had rank `rank` from OMPI_COMM_WORLD_RANK (as the library records it).
  fs::path ranked(const fs::path& recording, int rank) {
    std::string text = slurp(recording);
    const size_t run = text.find("\nrun ");
    const size_t eol = text.find('\n', run + 1);
    text.insert(eol, " rank=" + std::to_string(rank) + " rank_from=OMPI_COMM_WORLD_RANK");
    const fs::path out = dir_ / (recording.stem().string() + ".rank" + std::to_string(rank) + ".rec");
    std::ofstream(out) << text;
    return out;
  }
  Result merge(std::vector<std::string> args) {
    args.insert(args.begin(), "merge");
    return asynccheck(args);
  }
};

// The same report given twice is refused: its calls would count twice (issue 22: "pids 429, 429").
TEST_F(Merge, TheSameReportTwiceIsRefused) {
  const fs::path a = report_of(kRecording, "a.json"), copy = report_of(kRecording, "copy.json");
  Result r = merge({a.string(), copy.string(), "--summary=0"});
  EXPECT_NE(r.code(), 0);
  EXPECT_NE(r.err.find("is the report of the same run as '" + a.string() + "'"), std::string::npos) << r.err;
  r = merge({a.string(), a.string(), "--summary=0"});
  EXPECT_NE(r.code(), 0);
  EXPECT_NE(r.err.find("given twice"), std::string::npos) << r.err;
}

// Sums past what a report can hold (2^63 - 1) fail the merge rather than wrap (it printed "0 calls" and wrote a
// file its own reader refused; issue 22).
TEST_F(Merge, SumsPastWhatAReportHoldsAreRefused) {
  const fs::path a = report_of(kRecording, "a.json"), b = report_of(another_run(kRecording), "b.json");
  for (const fs::path& p : {a, b}) {
    std::string text = slurp(p);
    const size_t at = text.find("\"calls_watched\": ") + 17;
    text.replace(at, text.find(',', at) - at, "5000000000000000000");
    std::ofstream(p) << text;
  }
  const Result r = merge({a.string(), b.string(), "--json=" + (dir_ / "m.json").string(), "--summary=0"});
  EXPECT_NE(r.code(), 0);
  EXPECT_NE(r.err.find("add up past 2^63 - 1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "m.json"));
}

TEST_F(Merge, TwoRunsOfOneRecordingDoubleEveryCountExactly) {
  for (const fs::path& rec : recordings()) {
    SCOPED_TRACE(rec.filename().string());
    const std::string name = rec.stem().string();
    const fs::path one = report_of(rec, name + ".one.json"), two = report_of(another_run(rec), name + ".two.json");
    const fs::path merged = dir_ / (name + ".merged.json");
    const Result r = merge({one.string(), two.string(), "--json=" + merged.string(), "--summary=0"});
    ASSERT_EQ(r.code(), 0) << r.err;
    const JsonValue a = read_json(one), m = read_json(merged);
    for (const char* total : {"calls_watched", "gpu_operations", "dropped_records"}) {
      EXPECT_EQ(u(m["run"][total]), 2 * u(a["run"][total])) << total;
    }
    EXPECT_EQ(m["run"]["pid"].uint64(), 0u);
    EXPECT_TRUE(m["run"]["rank"].is_null());
    EXPECT_EQ(m["run"]["complete"].boolean(), a["run"]["complete"].boolean());
    EXPECT_EQ(m["run"]["threshold_ns"].uint64(), a["run"]["threshold_ns"].uint64());
    EXPECT_EQ(u(m["context_creation_ns"]), 2 * u(a["context_creation_ns"]));
    EXPECT_EQ(u(m["kind_disagreements"]), 2 * u(a["kind_disagreements"]));
    ASSERT_EQ(m["not_observed"].size(), a["not_observed"].size());
    for (const auto& [rule, count] : a["not_observed"].members())
      EXPECT_EQ(u(m["not_observed"][rule]), 2 * u(count)) << rule;
    ASSERT_EQ(m["processes"].size(), 2u);
    EXPECT_EQ(m["processes"][0]["file"].string(), one.string());
    EXPECT_EQ(m["processes"][1]["file"].string(), two.string());
    EXPECT_EQ(m["processes"][1]["pid"].uint64(), std::optional<uint64_t>(*a["run"]["pid"].uint64() + 1));
    ASSERT_EQ(m["sites"].size(), a["sites"].size());
    std::map<Key, const JsonValue*> single;
    for (const JsonValue& s : a["sites"].items()) single[key_of(s)] = &s;
    for (const JsonValue& s : m["sites"].items()) {
      ASSERT_EQ(single.count(key_of(s)), 1u) << s["fingerprint"].string();
      const JsonValue& o = *single[key_of(s)];
      EXPECT_EQ(u(s["count"]), 2 * u(o["count"]));
      EXPECT_EQ(u(s["total_ns"]), 2 * u(o["total_ns"]));
      EXPECT_EQ(u(s["bytes"]), 2 * u(o["bytes"]));
      EXPECT_EQ(u(s["max_ns"]), u(o["max_ns"]));
      EXPECT_EQ(u(s["median_ns"]), u(o["median_ns"]));  // the median of two equal medians is exact
      for (const char* same : {"level", "verdict", "fingerprint", "evidence", "note", "predicted", "measure"}) {
        EXPECT_EQ(s[same].string(), o[same].string()) << same;
      }
      ASSERT_EQ(s["processes"].size(), 2u);
      for (const JsonValue& p : s["processes"].items()) {
        EXPECT_EQ(u(p["count"]), u(o["count"]));
        EXPECT_EQ(u(p["total_ns"]), u(o["total_ns"]));
      }
    }
  }
}

TEST_F(Merge, DifferentSamplesKeepEverySiteWithSummedCounts) {
  std::vector<std::string> args;
  std::map<Key, uint64_t> count, total;
  uint64_t calls = 0, sites_in = 0;
  int n = 0;
  for (const fs::path& rec : recordings()) {
    const fs::path json = report_of(rec, "r" + std::to_string(n++) + ".json");
    args.push_back(json.string());
    const JsonValue r = read_json(json);
    calls += u(r["run"]["calls_watched"]);
    for (const JsonValue& s : r["sites"].items()) {
      count[key_of(s)] += u(s["count"]);
      total[key_of(s)] += u(s["total_ns"]);
      ++sites_in;
    }
  }
  ASSERT_GT(sites_in, count.size()) << "some samples share sites (the same program in several modes)";
  const fs::path merged = dir_ / "all.json";
  args.push_back("--json=" + merged.string());
  const Result r = merge(args);
  ASSERT_EQ(r.code(), 0) << r.err;
  const JsonValue m = read_json(merged);
  EXPECT_EQ(u(m["run"]["calls_watched"]), calls);
  EXPECT_EQ(m["processes"].size(), recordings().size());
  ASSERT_EQ(m["sites"].size(), count.size());
  uint64_t previous = UINT64_MAX;
  for (const JsonValue& s : m["sites"].items()) {
    EXPECT_EQ(u(s["count"]), count[key_of(s)]) << s["fingerprint"].string();
    EXPECT_EQ(u(s["total_ns"]), total[key_of(s)]) << s["fingerprint"].string();
    EXPECT_LE(u(s["total_ns"]), previous) << "worst first";
    previous = u(s["total_ns"]);
  }
  // Several programs: the run names them all.
  EXPECT_NE(m["run"]["program"].string().find("seed000_answer; "), std::string::npos) << m["run"]["program"].string();
  EXPECT_NE(r.err.find("asynccheck: merged report of " + std::to_string(recordings().size()) + " processes (pids "),
            std::string::npos)
      << r.err;
}

TEST_F(Merge, MergesMergeAgainWithTheSameSumsAndProvenance) {
  const auto recs = recordings();
  const fs::path a = report_of(recs[0], "a.json"), b = report_of(recs[1], "b.json"),
                 c = report_of(another_run(recs[0]), "c.json");
  const fs::path ab = dir_ / "ab.json", ab_c = dir_ / "ab_c.json", abc = dir_ / "abc.json";
  ASSERT_EQ(merge({a.string(), b.string(), "--json=" + ab.string(), "--summary=0"}).code(), 0);
  const Result again = merge({ab.string(), c.string(), "--json=" + ab_c.string(), "--summary=0"});
  ASSERT_EQ(again.code(), 0) << again.err;
  ASSERT_EQ(merge({a.string(), b.string(), c.string(), "--json=" + abc.string(), "--summary=0"}).code(), 0);
  const JsonValue x = read_json(ab_c), y = read_json(abc);
  EXPECT_EQ(u(x["run"]["calls_watched"]), u(y["run"]["calls_watched"]));
  ASSERT_EQ(x["processes"].size(), 3u);
  ASSERT_EQ(y["processes"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(x["processes"][i]["file"].string(), y["processes"][i]["file"].string());
  ASSERT_EQ(x["sites"].size(), y["sites"].size());
  for (size_t i = 0; i < x["sites"].size(); ++i) {
    const JsonValue &s = x["sites"][i], &t = y["sites"][i];
    EXPECT_EQ(key_of(s), key_of(t));
    for (const char* f : {"count", "total_ns", "max_ns", "bytes"}) EXPECT_EQ(u(s[f]), u(t[f])) << f;
    ASSERT_EQ(s["processes"].size(), t["processes"].size());
    for (size_t k = 0; k < s["processes"].size(); ++k) {
      EXPECT_EQ(u(s["processes"][k]["count"]), u(t["processes"][k]["count"]));
      EXPECT_EQ(u(s["processes"][k]["pid"]), u(t["processes"][k]["pid"]));
    }
  }
}

// The SARIF of a merge: one invocation per process, each result's shares; report.merge_sarif_schema validates it.
TEST_F(Merge, SarifHasOneInvocationPerProcess) {
  const fs::path r0 = report_of(ranked(kRecording, 0), "r0.json"), r1 = report_of(ranked(kRecording, 1), "r1.json");
  const fs::path sarif = fs::path(ASYNCCHECK_BINARY_DIR) / "merged.sarif";
  fs::remove(sarif);
  const Result r = merge({r0.string(), r1.string(), "--sarif=" + sarif.string()});
  ASSERT_EQ(r.code(), 0) << r.err;
  const JsonValue run = read_json(sarif)["runs"][0];
  ASSERT_EQ(run["invocations"].size(), 2u);
  EXPECT_EQ(run["invocations"][1]["properties"]["rank"].uint64(), 1u);
  EXPECT_EQ(run["invocations"][1]["properties"]["rankVariable"].string(), "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(run["invocations"][0]["properties"]["report"].string(), r0.string());
  ASSERT_GT(run["results"].size(), 0u);
  const JsonValue& props = run["results"][0]["properties"];
  EXPECT_EQ(u(props["count"]), 2u);
  ASSERT_EQ(props["processes"].size(), 2u);
  EXPECT_EQ(props["processes"][0]["rank"].uint64(), 0u);
  EXPECT_NE(run["results"][0]["message"]["text"].string().find("From 2 processes; the median is estimated"),
            std::string::npos);
  // The summary names the ranks, the JSON each process's rank.
  EXPECT_NE(r.err.find("asynccheck: merged report of 2 processes (ranks 0, 1)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("from 2 processes (ranks 0, 1); the median is estimated from theirs"), std::string::npos)
      << r.err;
}

// The HTML page of a merge (--format=html --output=STEM writes STEM.html): every site, its processes, and in one
// line each why it has no timeline (reports hold totals, not calls); the same recording analyzed draws them.
TEST_F(Merge, HtmlPageHasEverySiteAndSaysWhyThereAreNoTimelines) {
  const fs::path r0 = report_of(ranked(kRecording, 0), "h0.json"), r1 = report_of(ranked(kRecording, 1), "h1.json");
  const Result r =
      merge({r0.string(), r1.string(), "--format=html", "--output=" + (dir_ / "merged").string(), "--summary=0"});
  ASSERT_EQ(r.code(), 0) << r.err;
  std::ifstream in(dir_ / "merged.html");
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t sites = read_json(r0)["sites"].size();
  ASSERT_GT(sites, 0u);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<tbody class=\"site\""), sites);
  EXPECT_EQ(count("No timeline: a merged report holds each site's totals, not its calls' times."), sites);
  EXPECT_EQ(count("<svg"), 0u);
  EXPECT_NE(html.find("2 processes (below)"), std::string::npos);
  ASSERT_EQ(
      asynccheck({"analyze", kRecording.string(), "--html=" + (dir_ / "one.html").string(), "--summary=0"}).code(), 0);
  std::ifstream one(dir_ / "one.html");
  const std::string page((std::istreambuf_iterator<char>(one)), std::istreambuf_iterator<char>());
  EXPECT_EQ(page.find("No timeline"), std::string::npos);
  EXPECT_NE(page.find("<svg class=\"timeline\""), std::string::npos);
}

TEST_F(Merge, ExitCodeOptionsAndBaselineWorkOnTheMerge) {
  const fs::path a = report_of(kRecording, "a.json"), b = report_of(another_run(kRecording), "b.json");
  EXPECT_EQ(merge({a.string(), b.string(), "--error-exitcode=3", "--summary=0"}).code(), 3);  // errors found
  EXPECT_EQ(merge({a.string(), b.string(), "--summary=0"}).code(), 0);                        // no --error-exitcode
  const fs::path baseline = dir_ / "merged.baseline";
  ASSERT_EQ(merge({a.string(), b.string(), "--save-baseline=" + baseline.string(), "--summary=0"}).code(), 0);
  EXPECT_NE(slurp(baseline).find("copy-async-pageable-h2d|cudaMemcpyAsync|main|seed000_answer.cu"), std::string::npos);
  const Result known = merge({a.string(), b.string(), "--baseline=" + baseline.string(), "--error-exitcode=3"});
  EXPECT_EQ(known.code(), 0) << known.err;
  EXPECT_NE(known.err.find("(in baseline)"), std::string::npos) << known.err;
  // A suppression given to merge hides a merged site and counts both processes' calls.
  const fs::path supp = dir_ / "s.supp";
  std::ofstream(supp) << "copy-async-pageable-h2d:cudaMemcpyAsync\n";
  const fs::path json = dir_ / "m.json";
  ASSERT_EQ(merge({a.string(), b.string(), "--suppressions=" + supp.string(), "--json=" + json.string(), "--summary=0"})
                .code(),
            0);
  const JsonValue m = read_json(json);
  ASSERT_EQ(m["suppressions"].size(), 1u);
  EXPECT_EQ(u(m["suppressions"][0]["calls"]), 2u);
  EXPECT_EQ(u(m["suppressions"][0]["sites"]), 1u);
  for (const JsonValue& s : m["sites"].items()) EXPECT_NE(s["rule"].string(), "copy-async-pageable-h2d");
  // Written in every format but the trace, under --output; an existing file is an error as elsewhere.
  const fs::path stem = dir_ / "both";
  ASSERT_EQ(merge({a.string(), "--output=" + stem.string(), "--format=json,sarif", "--summary=0"}).code(), 0);
  EXPECT_TRUE(fs::exists(stem.string() + ".json"));
  EXPECT_TRUE(fs::exists(stem.string() + ".sarif"));
  EXPECT_EQ(merge({a.string(), "--output=" + stem.string(), "--format=json,sarif"}).code(), 2);
}

TEST_F(Merge, TheRankOfARecordingNamesItsReport) {
  const fs::path rec = ranked(kRecording, 3);
  const std::string stem = (dir_ / "r.%r").string();
  const Result r = asynccheck({"analyze", rec.string(), "--output=" + stem, "--format=json,sarif"});
  ASSERT_EQ(r.code(), 0) << r.err;
  ASSERT_TRUE(fs::exists(dir_ / "r.3.json"));
  ASSERT_TRUE(fs::exists(dir_ / "r.3.sarif"));
  const JsonValue j = read_json(dir_ / "r.3.json");
  EXPECT_EQ(j["run"]["rank"].uint64(), 3u);
  EXPECT_EQ(j["run"]["rank_variable"].string(), "OMPI_COMM_WORLD_RANK");
  const JsonValue props = read_json(dir_ / "r.3.sarif")["runs"][0]["invocations"][0]["properties"];
  EXPECT_EQ(props["rank"].uint64(), 3u);
  EXPECT_EQ(props["rankVariable"].string(), "OMPI_COMM_WORLD_RANK");
  // Every summary line says whose it is; the first says where the rank came from.
  EXPECT_NE(r.err.find("asynccheck: [rank 3] 2 call sites where CUDA held the host or serialized the GPU (waits from "
                       "100.0 us, own cost from 1.00 ms, worst first; rank 3 from OMPI_COMM_WORLD_RANK, pid 429)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("asynccheck: [rank 3] SUMMARY: "), std::string::npos) << r.err;
  // Without a rank %r is the pid; the report says no rank.
  ASSERT_EQ(
      asynccheck({"analyze", kRecording.string(), "--json=" + (dir_ / "p.%r.json").string(), "--summary=0"}).code(), 0);
  const JsonValue p = read_json(dir_ / "p.429.json");
  EXPECT_TRUE(p["run"]["rank"].is_null());
  EXPECT_EQ(p["run"]["rank_variable"].string(), "");
}

// The launchers' variables through the command and through raw LD_PRELOAD (no GPU: monitoring is off, the report
// is still written and named by rank).
TEST_F(Merge, RanksFromTheEnvironmentNameEachProcesssReport) {
  const std::string path = (dir_ / "cmd.%r.json").string();
  Result r = run({kCommand.string(), "--output=" + path, "--format=json", "--", "/bin/true"},
                 {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=4"});
  ASSERT_EQ(r.code(), 0) << r.err;
  ASSERT_TRUE(fs::exists(dir_ / "cmd.2.json")) << r.err;
  JsonValue j = read_json(dir_ / "cmd.2.json");
  EXPECT_EQ(j["run"]["rank"].uint64(), 2u);
  EXPECT_EQ(j["run"]["rank_variable"].string(), "OMPI_COMM_WORLD_RANK");
  // bash, not dash: dash leaves with _exit(), which skips exit handlers.
  for (const auto& [var, rank] : std::vector<std::pair<std::string, int>>{
           {"PMI_RANK", 5}, {"SLURM_PROCID", 6}, {"PMIX_RANK", 7}, {"MV2_COMM_WORLD_RANK", 8}}) {
    r = run({"/bin/bash", "-c", "exit 0"}, {"LD_PRELOAD=" + kLibrary.string(), var + "=" + std::to_string(rank),
                                            "ASYNCCHECK_OPTIONS=summary=0:json=" + (dir_ / "raw.%r.json").string()});
    EXPECT_EQ(r.code(), 0) << r.err;
    const fs::path file = dir_ / ("raw." + std::to_string(rank) + ".json");
    ASSERT_TRUE(fs::exists(file)) << var << ": " << r.err;
    j = read_json(file);
    EXPECT_EQ(j["run"]["rank"].uint64(), static_cast<uint64_t>(rank));
    EXPECT_EQ(j["run"]["rank_variable"].string(), var);
  }
}

// One file for every process of a multi-process job would be written by the first and refused to the others at
// exit: it is an error up front, before the program runs.
TEST_F(Merge, OneFileForEveryRankIsAnErrorBeforeTheProgramRuns) {
  const std::string shared = (dir_ / "shared.json").string();
  const std::string marker = (dir_ / "ran").string();
  const std::string want = "asynccheck: ERROR: option 'json': '" + shared +
                           "' would be written by each of the 4 processes of this job (OMPI_COMM_WORLD_SIZE=4) (valid: "
                           "a name with %r, the rank, or %p, the pid; docs/mpi.md)";
  Result r = run({kCommand.string(), "--json=" + shared, "--", "/bin/touch", marker},
                 {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=4"});
  EXPECT_EQ(r.code(), 2);
  EXPECT_EQ(r.first_err_line(), want);
  EXPECT_FALSE(fs::exists(marker));
  // Raw LD_PRELOAD: the program runs unchanged, unwatched, and says why.
  r = run({"/bin/bash", "-c", "exit 5"}, {"LD_PRELOAD=" + kLibrary.string(), "SLURM_PROCID=1", "SLURM_STEP_NUM_TASKS=2",
                                          "ASYNCCHECK_OPTIONS=json=" + shared});
  EXPECT_EQ(r.code(), 5);
  EXPECT_NE(r.err.find("would be written by each of the 2 processes of this job (SLURM_STEP_NUM_TASKS=2)"),
            std::string::npos)
      << r.err;
  // One process (a size of 1), or no size known: one file is fine.
  const std::string one = (dir_ / "one.json").string();
  r = run({kCommand.string(), "--json=" + one, "--", "/bin/true"},
          {"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1"});
  EXPECT_EQ(r.code(), 0) << r.err;
  EXPECT_TRUE(fs::exists(one));
}

// A copy of `recording` whose calls happened in NVTX ranges: `ranges` declared (domain, name; percent-encoded as
// in a recording), the k-th call line in range pick(k) (0: none).
fs::path with_ranges(const fs::path& recording, const fs::path& out, const std::vector<std::string>& ranges,
                     uint32_t (*pick)(size_t)) {
  std::istringstream in(slurp(recording));
  std::string text, line;
  bool declared = false;
  size_t k = 0;
  while (std::getline(in, line)) {
    const bool call = line.rfind("call ", 0) == 0 || line.rfind("ctxcall ", 0) == 0;
    if (call && !declared) {
      for (size_t i = 0; i < ranges.size(); ++i) text += "nvtx " + std::to_string(i + 1) + " " + ranges[i] + "\n";
      declared = true;
    }
    if (call) {
      if (const uint32_t range = pick(k++)) line += " " + std::to_string(range);
    }
    text += line + "\n";
  }
  std::ofstream(out) << text;
  return out;
}

// NVTX ranges through `asynccheck merge`: each site's per-range counts are the sums of the processes' counts per
// range name and domain (their ids differ), and they survive a merge of merges.
TEST_F(Merge, NvtxRangeCountsAreSummedPerRange) {
  const fs::path a = with_ranges(kRecording, dir_ / "a.rec", {"%00 forward", "%00 backward"}, [](size_t k) -> uint32_t {
    return k % 3 == 2 ? 0 : 1 + k % 2;  // forward, backward, none, ...
  });
  const fs::path b = with_ranges(kRecording, dir_ / "b.rec", {"lib backward", "%00 forward"}, [](size_t k) -> uint32_t {
    return k % 2 ? 2 : 1;  // lib's backward, forward, ...
  });
  const fs::path ra = report_of(a, "a.json"), rb = report_of(b, "b.json"), merged = dir_ / "m.json";
  ASSERT_EQ(merge({ra.string(), rb.string(), "--json=" + merged.string(), "--summary=0"}).code(), 0);
  using Ranges = std::map<std::pair<std::string, std::string>, uint64_t>;
  auto ranges_of = [](const JsonValue& site) {
    Ranges out;
    if (!site.has("nvtx_ranges")) return out;
    for (const JsonValue& r : site["nvtx_ranges"].items())
      out[{r["name"].string(), r["domain"].string()}] += u(r["count"]);
    return out;
  };
  const JsonValue ja = read_json(ra), jb = read_json(rb), jm = read_json(merged);
  std::map<Key, Ranges> want;
  size_t with = 0;
  for (const JsonValue* j : {&ja, &jb}) {
    for (const JsonValue& s : (*j)["sites"].items()) {
      for (const auto& [range, count] : ranges_of(s)) want[key_of(s)][range] += count;
      with += s.has("nvtx_ranges");
    }
  }
  ASSERT_GT(with, 0u) << "no finding of " << kRecording << " was put in a range";
  ASSERT_EQ(jm["sites"].size(), ja["sites"].size());
  for (const JsonValue& s : jm["sites"].items()) {
    SCOPED_TRACE(s["fingerprint"].string());
    EXPECT_EQ(ranges_of(s), want[key_of(s)]);
    if (!s.has("nvtx_ranges")) continue;
    // Most first, and nvtx_range names the first.
    const auto& items = s["nvtx_ranges"].items();
    for (size_t i = 1; i < items.size(); ++i) EXPECT_GE(u(items[i - 1]["count"]), u(items[i]["count"]));
    EXPECT_EQ(s["nvtx_range"].string(), items[0]["name"].string());
  }
  // A merge of the merge and a again: a's counts twice, b's once.
  const fs::path again = dir_ / "m2.json";
  ASSERT_EQ(merge({merged.string(), ra.string(), "--json=" + again.string(), "--summary=0"}).code(), 0);
  const JsonValue j2 = read_json(again);
  for (const JsonValue& s : ja["sites"].items()) {
    for (const auto& [range, count] : ranges_of(s)) want[key_of(s)][range] += count;
  }
  for (const JsonValue& s : j2["sites"].items()) EXPECT_EQ(ranges_of(s), want[key_of(s)]) << s["fingerprint"].string();
  // The summary of the merge names the ranges, though a merge has no events to read them from.
  const Result r = merge({ra.string(), rb.string()});
  ASSERT_EQ(r.code(), 0) << r.err;
  EXPECT_NE((r.out + r.err).find(", in NVTX range \""), std::string::npos) << r.out << r.err;
}

TEST_F(Merge, BadInputIsExitCodeTwoWithThePlaceAndWhatIsValid) {
  const fs::path good = report_of(kRecording, "good.json");
  const std::string text = slurp(good);
  const std::string g = good.string();
  auto file = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name) << content;
    return (dir_ / name).string();
  };
  auto mutated = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string t = text;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return std::pair{file(name, t), t};
  };
  const std::string valid = " (valid: a report written by asynccheck --json)";
  const std::string not_json = " (not JSON; valid: a report written by asynccheck --json)";
  const auto [no_pid, no_pid_text] = mutated("no_pid.json", "\"pid\": 429, ", "");
  const auto [str_count, str_count_text] = mutated("str_count.json", "\"count\": 1,", "\"count\": \"1\",");
  const auto [neg, neg_text] = mutated("neg.json", "\"total_ns\": 27605168", "\"total_ns\": -5");
  const auto [rule, rule_text] =
      mutated("rule.json", "\"rule\": \"copy-async-pageable-h2d\"", "\"rule\": \"no-such-rule\"");
  const auto [maxed, maxed_text] = mutated("max.json", "\"max_ns\": 27605168", "\"max_ns\": 27605169");
  const auto [v2, v2_text] = mutated("v2.json", "\"version\": 1", "\"version\": 2");
  const auto [schema, schema_text] = mutated("schema.json", "\"asynccheck-report\"", "\"other-report\"");
  const auto [dup, dup_text] = mutated("dup.json", "\"pid\": 429,", "\"pid\": 429, \"pid\": 430,");
  const auto [level, level_text] = mutated("level.json", "\"level\": \"error\"", "\"level\": \"fatal\"");
  const auto [args, args_text] = mutated("args.json", "\"args\": [\"pageable\"", "\"args\": [7");
  const std::string cut = file("cut.json", text.substr(0, text.size() / 2));
  const fs::path slow = report_of(kRecording, "slow.json", {"--threshold=1ms"});
  fs::create_directories(dir_ / "reports");
  const std::string sarif = (dir_ / "x.sarif").string();
  ASSERT_EQ(asynccheck({"analyze", kRecording.string(), "--sarif=" + sarif, "--summary=0"}).code(), 0);

  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "merge needs at least one report (usage: asynccheck merge [options] REPORT.json...)"},
      {{(dir_ / "none.json").string()},
       "cannot read report '" + (dir_ / "none.json").string() + "': No such file or directory"},
      {{(dir_ / "reports").string()},
       "cannot read report '" + (dir_ / "reports").string() +
           "': it is a directory (valid: report files; let the shell "
           "expand a glob: " +
           (dir_ / "reports").string() + "/*.json)"},
      {{file("empty.json", "")},
       (dir_ / "empty.json").string() + ":1:1: unexpected end of input (valid: a value)" + not_json},
      {{file("text.json", "hello\n")},
       (dir_ / "text.json").string() +
           ":1:1: unexpected 'h' (valid: a value: object, array, string, number, true, false, "
           "null)" +
           not_json},
      {{file("array.json", "[1]")},
       (dir_ / "array.json").string() + ":1:1: expected an object, found an array" + valid},
      {{sarif}, sarif + ":1:1: missing member \"schema\"" + valid},  // a SARIF file given by mistake
      {{schema},
       schema + ":" + where(schema_text, "\"other-report\"") +
           ": schema: 'other-report' is not an asynccheck report (valid: asynccheck-report)"},
      {{v2},
       v2 + ":" + where(v2_text, "2,") +
           ": version: version 2 is not supported (valid: 1, what this asynccheck reads and writes)"},
      {{no_pid}, no_pid + ":" + where(no_pid_text, "{\"program\"") + ": run: missing member \"pid\"" + valid},
      {{args}, args + ":" + where(args_text, "7,") + ": run.args[0]: expected a string, found 7"},
      {{str_count},
       str_count + ":" + where(str_count_text, "\"1\",") + ": sites[0].count: expected a number, found \"1\""},
      {{neg},
       neg + ":" + where(neg_text, "-5") +
           ": sites[0].total_ns: expected a whole number from 0 to 18446744073709551615, found -5"},
      {{rule},
       rule + ":" + where(rule_text, "\"no-such-rule\"") +
           ": sites[0].rule: unknown rule 'no-such-rule' (valid: a rule of asynccheck --list-rules)"},
      {{level},
       level + ":" + where(level_text, "\"fatal\"") +
           ": sites[0].level: 'fatal' is not a level (valid: none, note, warning, error)"},
      {{maxed}, maxed + ":" + where(maxed_text, "27605169") + ": sites[0].max_ns: 27605169 exceeds total_ns 27605168"},
      {{dup},
       dup + ":" + where(dup_text, "\"pid\": 430") +
           ": duplicate member name \"pid\" (valid: each name once per object)" + not_json},
      {{g, slow.string()},
       "'" + slow.string() + "' was made with threshold 1ms, '" + g +
           "' with 100us: counts of calls over different "
           "thresholds do not add up (valid: reports of runs with one --threshold)"},
      {{g, "--threshold=1ms"},
       "option '--threshold' does not apply to merge: reports hold findings, not events (valid: format, output, json, "
       "sarif, html, log-file, summary, print-limit, suppressions, source-root, baseline, save-baseline, overwrite, "
       "error-exitcode, "
       "fail-on, require-monitoring)"},
      {{g, "--format=trace", "--output=" + (dir_ / "t").string()},
       "merge cannot write a Chrome trace: reports hold findings, not the events a trace draws (valid formats: json, "
       "sarif, html)"},
      {{g, "--json=" + g},
       "option 'json': cannot write '" + g +
           "': it already exists (valid: a new path, overwrite=1 to "
           "replace it, or %p or %r in the name for one file per process or rank)"},
  };
  for (const auto& [argv, want] : cases) {
    const Result r = merge(argv);
    EXPECT_EQ(r.code(), 2) << want;
    EXPECT_EQ(r.first_err_line(), "asynccheck: ERROR: " + want);
  }
  // A truncated report: the place where it stops.
  const Result r = merge({cut});
  EXPECT_EQ(r.code(), 2);
  EXPECT_TRUE(std::regex_search(
      r.first_err_line(),
      std::regex("^asynccheck: ERROR: " + std::regex_replace(cut, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                 ":[0-9]+:[0-9]+: .*\\(not JSON; valid: a report written by asynccheck --json\\)$")))
      << r.first_err_line();
}

}  // namespace
