// Reads the samples' expected-findings files (docs/expected-findings.md) and checks a run's findings against one
// `run` block. Shared by the CI replay test and the GPU end-to-end check.
#pragma once

#include <string>
#include <vector>

#include "report/report.h"

namespace asynccheck::expect {

struct Line {
  bool expect = true;  // expect (true) or silent (false)
  std::string rule;    // expect only
  std::string api;
  std::string file;
  int line = 0;
  int source_line = 0;  // line in the expect file, for messages
  // expect only, optional: the NVTX range the site's findings must name (its innermost range), "-" for none; empty
  // when the line does not say. nvtx_domain: the range's domain ("" = NVTX's default domain).
  std::string nvtx;
  std::string nvtx_domain;
};

struct Block {
  std::string name;
  std::string binary;
  std::vector<std::string> args;
  std::vector<Line> lines;
};

// Parses an expect.txt; false with "FILE:LINE: what" in `error`.
bool parse(const std::string& path, std::vector<Block>& blocks, std::string& error);

// Returns one message per unmet line (empty = all met).
std::vector<std::string> check(const Block& block, const std::vector<report::SiteRow>& rows);

}  // namespace asynccheck::expect
