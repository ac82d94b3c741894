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
  uint64_t offset = 0;   // ip - the module's load bias: the address in the file (stable across runs)
  std::string function;  // demangled, "??" if unknown
  std::string file;      // source file, empty if unknown
  int line = 0;
};

struct CallSite {
  Frame frame;                 // the first frame outside CUDA, CUPTI and asynccheck: where the user called
  std::vector<Frame> frames;   // the user-visible stack, innermost first
  bool known() const { return frame.ip != 0; }
  std::string where() const;   // "file:line", or "module+0xoffset" without line information, or "unknown"
};

// Resolves the return addresses of every interned stack that `log.symbols` does not already hold, with addr2line
// (the binaries must still be on disk: call it at the end of the run, before writing a recording).
void resolve_symbols(EventLog& log);

// The call site of every interned stack, from `log.symbols` (frames without symbols keep module+offset).
// `kernel_names` (demangled) are the kernels whose host-side wrappers are skipped.
std::vector<CallSite> call_sites(const EventLog& log, const std::vector<std::string>& kernel_names);

// The demangled names of the kernels in `log`'s activity records.
std::vector<std::string> kernel_names(const EventLog& log);

std::string demangle(const std::string& name);

// A demangled name short enough to read in a summary line: template arguments and parameter lists of long names
// become "<...>" and "(...)" ("at::native::gpu_kernel_impl<...>(...)"); names of at most `max` characters are kept.
std::string short_function(const std::string& name, size_t max = 100);

}  // namespace asynccheck::report
