// Symbolization at report time, never in the hot path: return addresses -> function, file:line, through
// addr2line in a child process (so no DWARF library is loaded into the target and no symbols can clash).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/events.h"

namespace asynccheck::report {

// The module of a Python frame (which has no address): reports show it like any other module name.
inline constexpr std::string_view kPythonModule = "python";

struct Frame {
  uint64_t ip = 0;
  std::string module;    // path of the module holding it; kPythonModule for a Python frame
  uint64_t offset = 0;   // ip - the module's load bias: the address in the file (stable across runs)
  std::string function;  // demangled, "??" if unknown; a Python frame's code name ("step", "<module>")
  std::string file;      // source file, empty if unknown
  int line = 0;
  bool is_python() const { return ip == 0 && module == kPythonModule; }
};

struct CallSite {
  // Where the user called: for a Python program, the innermost Python frame outside installed packages
  // (site-packages/, dist-packages/), else the innermost Python frame; otherwise the first native frame outside
  // CUDA, CUPTI and asynccheck.
  Frame frame;
  std::vector<Frame> frames;   // the user-visible stack, innermost first: Python frames, then the native ones
  bool known() const;          // a native frame with an address, or a Python frame
  std::string where() const;   // "file:line", or "module+0xoffset" without line information, or "unknown"
};

// Resolves the return addresses of every interned stack that `log.symbols` does not already hold, with addr2line
// (the binaries must still be on disk: call it at the end of the run, before writing a recording).
void resolve_symbols(EventLog& log);

// The call site of every interned stack, from `log.symbols` (frames without symbols keep module+offset) and the
// stack's Python frames.
// `kernel_names` (demangled) are the kernels whose host-side wrappers are skipped.
std::vector<CallSite> call_sites(const EventLog& log, const std::vector<std::string>& kernel_names);

// The demangled names of the kernels in `log`'s activity records.
std::vector<std::string> kernel_names(const EventLog& log);

std::string demangle(const std::string& name);

// What follows the last '/' of a path (the whole path if it has none).
std::string_view base_name(std::string_view path);

// A demangled name short enough to read in a summary line: template arguments and parameter lists of long names
// become "<...>" and "(...)" ("at::native::gpu_kernel_impl<...>(...)"); names of at most `max` characters are kept.
std::string short_function(const std::string& name, size_t max = 100);

}  // namespace asynccheck::report
