// Symbolization at report time, never in the hot path: return addresses -> function, file:line, through
// addr2line in a child process (so no DWARF library is loaded into the target and no symbols can clash).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/events.h"

namespace asynccheck::report {

struct Frame {
  uint64_t ip = 0;
  std::string module;    // path of the module holding it
  std::string function;  // demangled, "??" if unknown
  std::string file;      // source file, empty if unknown
  int line = 0;
};

struct CallSite {
  Frame frame;                 // the first frame outside CUDA, CUPTI and asynccheck: where the user called
  std::vector<Frame> frames;   // the user-visible stack, innermost first
  bool known() const { return frame.ip != 0; }
  std::string where() const;   // "file:line" or "function (module+0xoff)" or "unknown"
};

// Resolves every interned stack of `log`. `kernel_names` (demangled) are the kernels' host stubs to skip.
// Without addr2line (or with symbolize off), frames keep module+offset only.
std::vector<CallSite> symbolize(const EventLog& log, const std::vector<std::string>& kernel_names, bool use_addr2line);

std::string demangle(const std::string& name);

}  // namespace asynccheck::report
