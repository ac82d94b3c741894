// Symbolization at report time, never in the hot path: return addresses -> function, file:line, through
// addr2line in a child process (so no DWARF library is loaded into the target and no symbols can clash).
#pragma once

#include <chrono>

#include <cstdint>
#include <optional>
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
  // (site-packages/, dist-packages/), else the innermost Python frame. Otherwise the innermost native frame of the
  // user's code: outside CUDA, CUPTI and asynccheck, and outside the libraries of library_patterns (cuBLAS, cuDNN,
  // libtorch, ...) and nvcc's generated tmpxft_* files; a stack with no such frame keeps the first frame outside
  // CUDA, CUPTI and asynccheck.
  Frame frame;
  // When the native site called into such a library: the library's entry point, the outermost frame of that
  // library run just inside the site ("cublasDgemv_v2"; its module's base name when it has no function name).
  // Empty otherwise, and for Python sites.
  std::string library_entry;
  std::vector<Frame> frames;  // the user-visible stack, innermost first: Python frames, then the native ones
  bool known() const;         // a native frame with an address, or a Python frame
  std::string where() const;  // "file:line", or "module+0xoffset" without line information, or "unknown"
};

// Resolves the return addresses of every interned stack that `log.symbols` does not already hold, with addr2line
// (the binaries must still be on disk: call it at the end of the run, before writing a recording). At most `limit`
// in all (a program's exit must not wait on a symbolizer that hangs): returns how many addresses were left
// unresolved because it ran out (their frames keep module+offset), 0 when it finished.
inline constexpr std::chrono::milliseconds kSymbolizeLimit{30'000};
size_t resolve_symbols(EventLog& log, std::chrono::milliseconds limit = kSymbolizeLimit);

// The libraries whose frames are not the user's code, as glob patterns ('*' any run, '?' one character): a
// pattern without '/' is matched against a module's base name, one with '/' against its whole path. The CUDA
// libraries (cuBLAS and cuBLASLt, cuDNN, cuFFT, cuRAND, cuSPARSE, cuSOLVER, cuTENSOR, NPP, nvJPEG, NCCL, NVRTC,
// nvJitLink), PyTorch's (libtorch*, libc10*) and CuPy's compiled modules (under cupy/ or cupy_backends/).
const std::vector<std::string>& default_library_patterns();

// The patterns of option library_frames: comma-separated globs added to the default list; a first item "-" drops
// the default list ("-" alone: no library is set apart). Empty items are ignored.
std::vector<std::string> library_patterns(std::string_view option);

// The call site of every interned stack, from `log.symbols` (frames without symbols keep module+offset) and the
// stack's Python frames.
// `kernel_names` (demangled) are the kernels whose host-side wrappers are skipped; `library_patterns` name the
// modules that are libraries rather than the user's code (see CallSite::frame).
std::vector<CallSite> call_sites(const EventLog& log, const std::vector<std::string>& kernel_names,
                                 const std::vector<std::string>& library_patterns = default_library_patterns());

// The demangled names of the kernels in `log`'s activity records.
std::vector<std::string> kernel_names(const EventLog& log);

std::string demangle(const std::string& name);

// What follows the last '/' of a path (the whole path if it has none).
std::string_view base_name(std::string_view path);

// Where a fault happened (RunInfo::fault): "at MODULE+0xOFFSET, address 0xADDRESS", MODULE the base name of the
// module whose mapping holds `pc` and OFFSET `pc` less its load bias (a frame's offset: what addr2line takes), or
// "at 0xPC, ..." when no module holds it; without ", address ..." when the kernel gave none.
std::string fault_place(uint64_t pc, std::optional<uint64_t> address, const std::vector<Module>& modules);

// A demangled name short enough to read in a summary line: template arguments and parameter lists of long names
// become "<...>" and "(...)" ("at::native::gpu_kernel_impl<...>(...)"); names of at most `max` characters are kept.
std::string short_function(const std::string& name, size_t max = 100);

}  // namespace asynccheck::report
