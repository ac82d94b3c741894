#include "tests/support/expect.h"

#include <fstream>
#include <sstream>

#include "rules/catalog.h"

namespace asynccheck::expect {
namespace {

bool parse_location(const std::string& text, Line& l) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  l.file = text.substr(0, colon);
  l.line = std::atoi(text.c_str() + colon + 1);
  return l.line > 0;
}

std::string basename_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// What a row says about NVTX ranges, as an expect line writes it: "-" for none, else the name of the range most of
// its findings were in, with the domain and the other ranges when there are any.
std::string nvtx_of(const report::SiteRow& r) { return r.nvtx.empty() ? "-" : report::nvtx_text(r); }

bool nvtx_matches(const report::SiteRow& r, const Line& l) {
  if (l.nvtx.empty()) return true;
  if (l.nvtx == "-") return r.nvtx.empty();
  // Every finding of the site in that one range: the innermost range the line names, nothing else.
  if (r.nvtx.size() != 1 || r.nvtx[0].count != r.count) return false;
  return r.nvtx[0].name == l.nvtx && r.nvtx[0].domain == l.nvtx_domain;
}

bool at(const report::SiteRow& r, const Line& l) {
  return r.api == l.api && basename_of(r.site.frame.file) == l.file && r.site.frame.line == l.line;
}

}  // namespace

bool parse(const std::string& path, std::vector<Block>& blocks, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = path + ": cannot read";
    return false;
  }
  std::string text;
  int n = 0;
  while (std::getline(in, text)) {
    ++n;
    if (size_t hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    std::istringstream words(text);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) continue;
    auto fail = [&](const std::string& what) {
      error = path + ":" + std::to_string(n) + ": " + what;
      return false;
    };
    if (w[0] == "run") {
      if (w.size() < 3) return fail("run needs NAME BINARY [ARGS...]");
      blocks.push_back({w[1], w[2], {w.begin() + 3, w.end()}, {}});
    } else if (w[0] == "expect" || w[0] == "silent") {
      if (blocks.empty()) return fail("'" + w[0] + "' before any 'run'");
      Line l;
      l.expect = w[0] == "expect";
      l.source_line = n;
      const size_t want = l.expect ? 4 : 3;
      // expect lines may end with nvtx=NAME (or nvtx=- for none) and nvtx-domain=DOMAIN.
      while (l.expect && w.size() > want) {
        const std::string& opt = w.back();
        if (opt.rfind("nvtx=", 0) == 0 && opt.size() > 5 && l.nvtx.empty())
          l.nvtx = opt.substr(5);
        else if (opt.rfind("nvtx-domain=", 0) == 0 && opt.size() > 12 && l.nvtx_domain.empty())
          l.nvtx_domain = opt.substr(12);
        else
          return fail("'" + opt + "' is not nvtx=NAME, nvtx=- or nvtx-domain=DOMAIN (each at most once)");
        w.pop_back();
      }
      if (!l.nvtx_domain.empty() && (l.nvtx.empty() || l.nvtx == "-")) return fail("nvtx-domain= needs nvtx=NAME");
      if (w.size() != want) {
        return fail(l.expect ? "expect needs RULE-ID API FILE:LINE [nvtx=NAME|-] [nvtx-domain=DOMAIN]"
                             : "silent needs API FILE:LINE");
      }
      if (l.expect) {
        l.rule = w[1];
        if (!rules::find_rule(l.rule)) return fail("unknown rule '" + l.rule + "'");
      }
      l.api = w[want - 2];
      if (!parse_location(w[want - 1], l)) return fail("'" + w[want - 1] + "' is not FILE:LINE");
      blocks.back().lines.push_back(l);
    } else {
      return fail("unknown keyword '" + w[0] + "' (valid: run, expect, silent)");
    }
  }
  return true;
}

std::vector<std::string> check(const Block& block, const std::vector<report::SiteRow>& rows) {
  std::vector<std::string> failures;
  for (const Line& l : block.lines) {
    const std::string where = l.api + " at " + l.file + ":" + std::to_string(l.line);
    if (l.expect) {
      const report::SiteRow* found = nullptr;
      for (const auto& r : rows) {
        if (!found && at(r, l) && rules::rule(r.rule).id == l.rule) found = &r;
      }
      if (!found) {
        failures.push_back("run " + block.name + ": expected " + l.rule + " for " + where + ", not reported");
      } else if (!nvtx_matches(*found, l)) {
        const std::string want = l.nvtx == "-"
                                     ? "no NVTX range"
                                     : "NVTX range \"" + l.nvtx + "\"" +
                                           (l.nvtx_domain.empty() ? "" : " (domain \"" + l.nvtx_domain + "\")");
        failures.push_back("run " + block.name + ": " + l.rule + " for " + where + " must be in " + want + ", got " +
                           nvtx_of(*found));
      }
    } else {
      for (const auto& r : rows) {
        if (at(r, l) && r.level != rules::Level::None) {
          failures.push_back("run " + block.name + ": " + where + " must be silent, got " +
                             std::string(rules::rule(r.rule).id));
        }
      }
    }
  }
  return failures;
}

}  // namespace asynccheck::expect
