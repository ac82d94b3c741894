#include "report/symbolize.h"

#include <chrono>

#include <signal.h>

#include <poll.h>

#include "report/suppressions.h"  // glob_match

#include <cxxabi.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>

extern char** environ;

namespace asynccheck::report {
namespace {

const Module* module_of(const std::vector<Module>& modules, uint64_t ip) {
  for (const Module& m : modules) {
    if (ip >= m.base && ip < m.end) return &m;
  }
  return nullptr;
}

std::string basename_of(const std::string& path) { return std::string(base_name(path)); }

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// Runs `addr2line -C -f -e module addr...` and returns its stdout. Runs after the program finished its work;
// a missing addr2line is not an error (frames keep module+offset).
// `deadline`: past it, addr2line is killed and the call returns false with `timed_out` set.
bool run_addr2line(const std::string& module, const std::vector<uint64_t>& addrs, std::string& out,
                   std::chrono::steady_clock::time_point deadline, bool& timed_out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  // -a marks each address's group; -i expands inlined frames (a kernel's host wrapper is inlined into the
  // caller, and the caller's line is only visible as the outer inline frame). The innermost inlined frame comes
  // first and is the site when it is the user's (tests/report/inline_site_prog.cpp). binutils' addr2line (2.40)
  // names an inlined function of internal linkage (static, anonymous namespace) after its caller; its line is right.
  std::vector<std::string> args = {"addr2line", "-a", "-C", "-f", "-i", "-e", module};
  for (uint64_t a : addrs) args.push_back(hex(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", 0, 0);
  // The child must not inherit LD_PRELOAD/CUDA_INJECTION64_PATH: it would load us again.
  std::vector<char*> env;
  for (char** e = environ; e && *e; ++e) {
    if (starts_with(*e, "LD_PRELOAD=") || starts_with(*e, "CUDA_INJECTION64_PATH=")) continue;
    env.push_back(*e);
  }
  env.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "addr2line", &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return false;
  }
  char chunk[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    const int ready = left.count() > 0 ? poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0 && std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (ready <= 0) continue;
    const ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(chunk, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
  if (timed_out) return false;
  // ECHILD: the program set SIGCHLD to SIG_IGN, and the kernel reaped addr2line itself; its output is what it wrote.
  if (waited < 0) return !out.empty();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Frames that belong to CUDA, CUPTI, asynccheck or the compiler-generated launch stubs: not the user's call site.
bool is_internal(const Frame& f, const std::set<std::string>& kernels) {
  const std::string mod = basename_of(f.module);
  for (std::string_view lib : {"libcuda.", "libcudart.", "libcupti.", "libasynccheck.", "libunwind.", "libnvidia-"}) {
    if (starts_with(mod, lib)) return true;
  }
  const std::string& fn = f.function;
  if (starts_with(fn, "cudart::") || starts_with(fn, "__cudart") || starts_with(fn, "__device_stub_") ||
      starts_with(fn, "asynccheck::") || starts_with(fn, "libcupti") || starts_with(fn, "cupti")) {
    return true;
  }
  // The runtime API itself when linked statically into the program (cudaMemcpyAsync, cudaLaunchKernel<...>): no
  // source file (libcudart_static has no line information). A function of the user's named like one
  // (simpleCudaGraphs' cudaGraphsManual, often inlined into main) has its file and line, and is the user's.
  if (fn.size() > 4 && starts_with(fn, "cuda") && std::isupper(static_cast<unsigned char>(fn[4])) && f.file.empty()) {
    return true;
  }
  if (f.file.size() > 7 && f.file.ends_with(".stub.c")) return true;
  // Inline wrappers from the toolkit's headers (cuda_runtime.h's C++ overloads of cudaMalloc, cudaLaunchKernel).
  if (f.file.find("/include/") != std::string::npos &&
      (f.file.find("/cuda") != std::string::npos || f.file.find("/targets/") != std::string::npos)) {
    return true;
  }
  if (kernels.count(fn)) return true;  // the host-side wrapper nvcc generates for a kernel
  return false;
}

// A Python file of an installed package rather than the user's code: under a site-packages/ or dist-packages/
// directory (pip, conda, Debian's python3-* packages).
bool in_installed_package(const std::string& file) {
  for (std::string_view dir : {"site-packages/", "dist-packages/"}) {
    for (size_t at = file.find(dir); at != std::string::npos; at = file.find(dir, at + 1)) {
      if (at == 0 || file[at - 1] == '/' || file[at - 1] == '\\') return true;
    }
  }
  return false;
}

// A module of one of `patterns`' libraries (cuBLAS, libtorch, ...): its frames are the library's, not the user's.
bool in_library(const std::string& module, const std::vector<std::string>& patterns) {
  if (module.empty() || module == kPythonModule) return false;
  const std::string_view base = base_name(module);
  for (const std::string& p : patterns) {
    if (glob_match(p, p.find('/') == std::string::npos ? base : std::string_view(module))) return true;
  }
  return false;
}

// The C and C++ runtimes, the dynamic loader and the Python interpreter: between a library's frames they belong to
// its run (pthread_once running its initialization, a std::function it calls), and they are never the user's call
// site (a Python program's is its Python line).
bool in_system_runtime(const std::string& module) {
  const std::string_view base = base_name(module);
  for (std::string_view lib : {"libc.so", "libc-", "libpthread", "libstdc++", "libgcc_s", "libdl.", "libdl-", "libm.so",
                               "librt.", "ld-linux", "libpython"}) {
    if (base.starts_with(lib)) return true;
  }
  // python, python3, python3.12 (not python_tool).
  return base == "python" ||
         (base.starts_with("python") && base.size() > 6 && std::isdigit(static_cast<unsigned char>(base[6])));
}

// Code nvcc generated (tmpxft_*.cudafe1.cpp and the like): PyTorch's kernel launch stubs are located there.
bool in_generated_file(const Frame& f) { return base_name(f.file).starts_with("tmpxft_"); }

// What a frame is to the choice of the call site.
enum class FrameKind {
  Internal,  // CUDA, CUPTI, asynccheck, launch stubs (is_internal)
  Library,   // a library of the patterns: the user called it
  Other,     // not the user's either (the C runtime, generated files), but no library's entry
  User,
};

FrameKind frame_kind(const Frame& f, const std::set<std::string>& kernels, const std::vector<std::string>& patterns) {
  if (is_internal(f, kernels)) return FrameKind::Internal;
  if (in_library(f.module, patterns)) return FrameKind::Library;
  if (in_system_runtime(f.module) || in_generated_file(f)) return FrameKind::Other;
  return FrameKind::User;
}

}  // namespace

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

const std::vector<std::string>& default_library_patterns() {
  static const std::vector<std::string> patterns = {
      // CUDA's libraries (cuBLASLt and cuSPARSELt, cuSOLVERMg and the like match too).
      "libcublas*.so*", "libcudnn*.so*", "libcufft*.so*", "libcurand*.so*", "libcusparse*.so*", "libcusolver*.so*",
      "libcutensor*.so*", "libnpp*.so*", "libnvjpeg*.so*", "libnccl*.so*", "libnvrtc*.so*", "libnvJitLink*.so*",
      // PyTorch (libtorch, libtorch_cpu, libtorch_cuda, libtorch_python; libc10, libc10_cuda).
      "libtorch*.so*", "libc10*.so*",
      // CuPy's compiled modules.
      "*/cupy/*", "*/cupy_backends/*"};
  return patterns;
}

std::vector<std::string> library_patterns(std::string_view option) {
  std::vector<std::string> out = default_library_patterns();
  bool first = true;
  while (true) {
    const size_t comma = option.find(',');
    const std::string_view item = option.substr(0, comma);
    if (first && item == "-") {
      out.clear();
    } else if (!item.empty()) {
      out.emplace_back(item);
    }
    first = false;
    if (comma == std::string_view::npos) return out;
    option.remove_prefix(comma + 1);
  }
}

bool CallSite::known() const { return frame.ip != 0 || frame.is_python(); }

std::string CallSite::where() const {
  if (!known()) return "unknown";
  if (!frame.file.empty() && frame.line > 0) return basename_of(frame.file) + ":" + std::to_string(frame.line);
  if (frame.is_python()) return frame.file.empty() ? "unknown" : basename_of(frame.file);
  return basename_of(frame.module) + "+" + hex(frame.offset);
}

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string fault_place(uint64_t pc, std::optional<uint64_t> address, const std::vector<Module>& modules) {
  const Module* m = module_of(modules, pc);
  return "at " + (m ? basename_of(m->path) + "+" + hex(pc - m->bias) : hex(pc)) +
         (address ? ", address " + hex(*address) : "");
}

std::string short_function(const std::string& name, size_t max) {
  if (name.size() <= max) return name;
  std::string out;
  int angle = 0, paren = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    // "operator<" / "operator()" and the like are names, not brackets.
    if (name.compare(i, 21, "(anonymous namespace)") == 0) {  // a name, not a parameter list
      if (angle == 0 && paren == 0) out += "(anonymous namespace)";
      i += 20;
      continue;
    }
    if (name.compare(i, 8, "operator") == 0) {
      size_t j = i + 8;
      if (name.compare(j, 2, "()") == 0 || name.compare(j, 2, "[]") == 0) {
        j += 2;
      } else {
        while (j < name.size() && j < i + 11 &&
               std::string_view("<>=!+-*/%&|^~,").find(name[j]) != std::string_view::npos)
          ++j;
      }
      if (angle == 0 && paren == 0) out.append(name, i, j - i);
      i = j - 1;
      continue;
    }
    if (c == '<') {
      if (angle++ == 0 && paren == 0) out += "<...>";
    } else if (c == '>' && angle > 0) {
      --angle;
    } else if (c == '(' && angle == 0) {
      if (paren++ == 0) out += "(...)";
    } else if (c == ')' && angle == 0 && paren > 0) {
      --paren;
    } else if (angle == 0 && paren == 0) {
      out += c;
    }
  }
  return out;
}

size_t resolve_symbols(EventLog& log, std::chrono::milliseconds limit) {
  std::set<uint64_t> known;
  for (const Symbol& y : log.symbols) known.insert(y.ip);
  // A return address points after the call instruction: look up ip - 1 to land on the call's line.
  std::map<const Module*, std::vector<uint64_t>> by_module;
  std::set<uint64_t> seen;
  for (const Stack& s : log.stacks) {
    for (uint64_t ip : s.frames) {
      if (known.count(ip) || !seen.insert(ip).second) continue;
      if (const Module* m = module_of(log.modules, ip)) by_module[m].push_back(ip);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  size_t left_out = 0;
  bool timed_out = false;
  for (auto& [m, ips] : by_module) {
    if (timed_out) {
      left_out += ips.size();
      continue;
    }
    std::vector<uint64_t> addrs;
    for (uint64_t ip : ips) addrs.push_back(ip - m->bias - 1);
    std::string out;
    if (!run_addr2line(m->path, addrs, out, deadline, timed_out)) {
      if (timed_out) left_out += ips.size();
      continue;
    }
    std::istringstream in(out);
    std::string line, loc;
    size_t k = SIZE_MAX;
    while (std::getline(in, line)) {
      if (line.rfind("0x", 0) == 0) {  // -a: the next address's group
        if (++k >= ips.size()) break;
        continue;
      }
      if (k >= ips.size() || !std::getline(in, loc)) break;
      Symbol y;
      y.ip = ips[k];
      y.function = line;
      size_t colon = loc.rfind(':');
      if (colon != std::string::npos && loc.compare(0, 2, "??") != 0) {
        y.file = loc.substr(0, colon);
        y.line = std::atoi(loc.c_str() + colon + 1);  // "file:12 (discriminator 3)" -> 12
      }
      log.symbols.push_back(std::move(y));
    }
  }
  return left_out;
}

std::vector<std::string> kernel_names(const EventLog& log) {
  std::set<std::string> names;
  for (const GpuOp& op : log.ops) {
    if (op.kind == GpuOpKind::Kernel && !op.name.empty()) names.insert(demangle(op.name.str()));
  }
  return {names.begin(), names.end()};
}

std::vector<CallSite> call_sites(const EventLog& log, const std::vector<std::string>& kernel_list,
                                 const std::vector<std::string>& library_patterns) {
  const std::set<std::string> kernels(kernel_list.begin(), kernel_list.end());
  std::map<uint64_t, std::vector<Frame>> frames;  // ip -> its frames, innermost first
  for (const Symbol& y : log.symbols) {
    Frame f;
    f.ip = y.ip;
    f.function = y.function;
    f.file = y.file;
    f.line = y.line;
    frames[y.ip].push_back(std::move(f));
  }
  std::vector<CallSite> sites;
  for (const Stack& s : log.stacks) {
    CallSite site;
    if (!s.python.empty()) {
      // The user's code: the innermost frame outside installed packages (torch, cupy, ...), else the innermost.
      const PyFrame* chosen = &s.python.front();
      for (const PyFrame& p : s.python) {
        if (!in_installed_package(p.file)) {
          chosen = &p;
          break;
        }
      }
      for (const PyFrame& p : s.python) {
        Frame f;
        f.module = kPythonModule;
        f.function = p.function;
        f.file = p.file;
        f.line = p.line;
        if (&p == chosen) site.frame = f;
        site.frames.push_back(std::move(f));
      }
    }
    // The native frames, kept underneath the Python ones (the call site is the Python one when there is one).
    // They start at the first frame outside CUDA, CUPTI and asynccheck; the site is the first of them in the
    // user's code (inlined frames innermost first, so an inlined function of the user's is its own site), else
    // that first frame.
    const bool python = !s.python.empty();
    bool user = false, below_main = false, found = false;
    const Frame* entry = nullptr;  // the outermost library frame so far, until the site is found
    for (uint64_t ip : s.frames) {
      // Frames under main() are the C runtime's start-up (__libc_start_call_main, _start): nothing a user
      // can act on, and without libc's symbols addr2line names them after unrelated nearby functions.
      if (below_main) break;
      std::vector<Frame>& fs = frames[ip];
      if (fs.empty()) {
        Frame unknown;
        unknown.ip = ip;
        unknown.function = "??";
        fs.push_back(unknown);
      }
      const Module* m = module_of(log.modules, ip);
      for (Frame& f : fs) {
        if (m) {
          f.module = m->path;
          f.offset = ip - m->bias;
        }
        const FrameKind kind = frame_kind(f, kernels, library_patterns);
        if (!user && kind == FrameKind::Internal) continue;
        if (!user && !python) site.frame = f;  // the fallback, until a frame of the user's code
        user = true;
        if (!found && !python) {
          if (kind == FrameKind::Library) entry = &f;
          if (kind == FrameKind::User) {
            found = true;
            site.frame = f;
            if (entry) {
              site.library_entry = entry->function.empty() || entry->function == "??"
                                       ? std::string(base_name(entry->module))
                                       : entry->function;
            }
          }
        }
        site.frames.push_back(f);
        below_main = below_main || f.function == "main";
      }
    }
    sites.push_back(std::move(site));
  }
  return sites;
}

}  // namespace asynccheck::report
