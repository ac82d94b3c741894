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
      if (w.size() != want) return fail(l.expect ? "expect needs RULE-ID API FILE:LINE" : "silent needs API FILE:LINE");
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
      bool found = false;
      for (const auto& r : rows) found = found || (at(r, l) && rules::rule(r.rule).id == l.rule);
      if (!found) failures.push_back("run " + block.name + ": expected " + l.rule + " for " + where + ", not reported");
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
