// Call sites in the user's code (report/symbolize.cpp): a call a library made (cuBLAS, libtorch) is located at the
// user's frame that called the library, with the library's entry named; nvcc's generated tmpxft_* files are never
// the user's line; option library_frames adds libraries; a Python line still wins; inlined functions are their own
// sites. The writers show the entry (summary, JSON read back by a merge, SARIF).
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <thread>
#include <fstream>
#include <sstream>
#include <string>

#include "report/merge.h"
#include "report/report.h"
#include "report/symbolize.h"

namespace asynccheck::report {
namespace {

constexpr uint64_t kProg = 0x400000, kCudart = 0x7f0000000000, kCublas = 0x7f2000000000, kCublasLt = 0x7f3000000000,
                   kLibc = 0x7f4000000000, kMine = 0x7f5000000000, kTorchCuda = 0x7f6000000000,
                   kTorchPython = 0x7f7000000000, kExt = 0x7f8000000000, kPython = 0x7f9000000000;

Module module(uint64_t base, const std::string& path) { return Module{base, base + 0x100000, base, path}; }

// cudaMemcpyAsync made by cuBLAS (through cuBLASLt, with libc's pthread_once between) for the user's run(), called
// from main: NVIDIA's UnifiedMemoryStreams sample calling cublasDgemv.
EventLog cublas_log() {
  EventLog log;
  log.modules = {Module{kProg, kProg + 0x100000, 0, "/src/UnifiedMemoryStreams"},
                 module(kCudart, "/usr/local/cuda/lib64/libcudart.so.13"),
                 module(kCublas, "/usr/local/cuda/lib64/libcublas.so.13"),
                 module(kCublasLt, "/usr/local/cuda/lib64/libcublasLt.so.13"),
                 module(kLibc, "/lib/x86_64-linux-gnu/libc.so.6"),
                 module(kMine, "/opt/mylib/lib/libmysolver.so.2")};
  log.symbols = {{kCudart + 0x1000, "cudaMemcpyAsync", "", 0},
                 {kCublasLt + 0x1000, "cublasLtSSSMatmul", "", 0},
                 {kLibc + 0x1000, "__pthread_once_slow", "", 0},
                 {kCublas + 0x1000, "??", "", 0},
                 {kCublas + 0x2000, "cublasDgemv_v2", "", 0},
                 {0x401000, "run(Task&)", "/src/UnifiedMemoryStreams.cu", 219},
                 {0x402000, "main", "/src/UnifiedMemoryStreams.cu", 300},
                 {kLibc + 0x2000, "__libc_start_call_main", "", 0},
                 {kMine + 0x1000, "mysolver_run", "", 0}};
  log.stacks = {Stack{{kCudart + 0x1000, kCublasLt + 0x1000, kLibc + 0x1000, kCublas + 0x1000, kCublas + 0x2000,
                       0x401000, 0x402000, kLibc + 0x2000},
                      {}}};
  return log;
}

TEST(LibraryFrames, ACublasCallIsLocatedAtTheUserLineThatCalledCublas) {
  const std::vector<CallSite> sites = call_sites(cublas_log(), {});
  ASSERT_EQ(sites.size(), 1u);
  const CallSite& s = sites[0];
  EXPECT_EQ(s.frame.function, "run(Task&)");
  EXPECT_EQ(s.where(), "UnifiedMemoryStreams.cu:219");
  EXPECT_EQ(s.library_entry, "cublasDgemv_v2");  // the outermost cuBLAS frame, not cuBLASLt's nor the unnamed one
  // The stack still starts at the first frame outside the CUDA runtime, down to main.
  ASSERT_EQ(s.frames.size(), 6u);
  EXPECT_EQ(s.frames[0].function, "cublasLtSSSMatmul");
  EXPECT_EQ(s.frames[3].function, "cublasDgemv_v2");
  EXPECT_EQ(s.frames[4].function, "run(Task&)");
  EXPECT_EQ(s.frames[5].function, "main");
}

TEST(LibraryFrames, AnEntryWithoutAFunctionNameIsItsModule) {
  EventLog log = cublas_log();
  for (Symbol& y : log.symbols) {
    if (y.function == "cublasDgemv_v2") y.function = "??";
  }
  const CallSite s = call_sites(log, {})[0];
  EXPECT_EQ(s.where(), "UnifiedMemoryStreams.cu:219");
  EXPECT_EQ(s.library_entry, "libcublas.so.13");
}

// No frame of the user's code (a library's own thread): the first frame outside CUDA, as before, and no entry.
TEST(LibraryFrames, AStackOfLibraryFramesOnlyKeepsTheFirstFrameOutsideCuda) {
  EventLog log = cublas_log();
  log.stacks[0].frames = {kCudart + 0x1000, kCublasLt + 0x1000, kLibc + 0x1000, kCublas + 0x2000};
  const CallSite s = call_sites(log, {})[0];
  EXPECT_EQ(s.frame.function, "cublasLtSSSMatmul");
  EXPECT_EQ(s.where(), "libcublasLt.so.13+0x1000");
  EXPECT_EQ(s.library_entry, "");
  EXPECT_EQ(s.frames.size(), 3u);
}

TEST(LibraryFrames, TheOptionParsesIntoPatterns) {
  const std::vector<std::string>& defaults = default_library_patterns();
  EXPECT_EQ(library_patterns(""), defaults);
  std::vector<std::string> more = defaults;
  more.insert(more.end(), {"libmysolver*.so*", "*/opt/*"});
  EXPECT_EQ(library_patterns("libmysolver*.so*,*/opt/*"), more);
  EXPECT_EQ(library_patterns("-"), std::vector<std::string>{});
  EXPECT_EQ(library_patterns("-,libmysolver*"), std::vector<std::string>{"libmysolver*"});
}

// A library of the user's choice: the user's frame that called it, by base name or, with a '/', by path.
TEST(LibraryFrames, TheOptionAddsALibrary) {
  EventLog log = cublas_log();
  log.stacks[0].frames = {kCudart + 0x1000, kMine + 0x1000, 0x401000, 0x402000};
  EXPECT_EQ(call_sites(log, {})[0].frame.function, "mysolver_run");  // not a library by default
  for (const char* option : {"libmysolver*.so*", "libfoo.so,libmysolver.so.?", "*/opt/mylib/*"}) {
    const CallSite s = call_sites(log, {}, library_patterns(option))[0];
    EXPECT_EQ(s.where(), "UnifiedMemoryStreams.cu:219") << option;
    EXPECT_EQ(s.library_entry, "mysolver_run") << option;
  }
  // A base-name glob is not matched against the path, nor a path glob against the base name.
  EXPECT_EQ(call_sites(log, {}, library_patterns("mylib*"))[0].frame.function, "mysolver_run");
  EXPECT_EQ(call_sites(log, {}, library_patterns("*/libmysolver"))[0].frame.function, "mysolver_run");
  // '-' drops the default list: cuBLAS is the user's code again.
  const CallSite cublas = call_sites(cublas_log(), {}, library_patterns("-"))[0];
  EXPECT_EQ(cublas.frame.function, "cublasLtSSSMatmul");
  EXPECT_EQ(cublas.library_entry, "");
}

// PyTorch's launch stubs live in nvcc's generated files (tmpxft_..._Copy.compute_120.cudafe1.cpp): never the user's
// line, in libtorch or in the program itself.
TEST(LibraryFrames, GeneratedTmpxftFilesAreSkipped) {
  EventLog log;
  log.modules = {Module{kProg, kProg + 0x100000, 0, "/src/app"}, module(kCudart, "/usr/lib/libcudart.so.13"),
                 module(kTorchCuda, "/opt/libtorch/lib/libtorch_cuda.so")};
  const std::string stub = "/tmp/tmpxft_0000abcd_00000000-6_Copy.compute_120.cudafe1.cpp";
  log.symbols = {{kCudart + 0x1000, "cudaLaunchKernel", "", 0},
                 {kTorchCuda + 0x1000, "at::native::copy_kernel_cuda(at::TensorIterator&, bool)", stub, 0},
                 {kTorchCuda + 0x2000, "at::native::copy_(at::Tensor&, at::Tensor const&, bool)", "", 0},
                 {0x401000, "__wrapper__device_stub_fill(float*)", stub, 0},
                 {0x402000, "train()", "/src/app.cpp", 40},
                 {0x403000, "main", "/src/app.cpp", 50}};
  log.stacks = {Stack{{kCudart + 0x1000, kTorchCuda + 0x1000, kTorchCuda + 0x2000, 0x402000, 0x403000}, {}},
                Stack{{kCudart + 0x1000, 0x401000, 0x402000, 0x403000}, {}}};
  const std::vector<CallSite> sites = call_sites(log, {});
  EXPECT_EQ(sites[0].where(), "app.cpp:40");
  EXPECT_EQ(sites[0].library_entry, "at::native::copy_(at::Tensor&, at::Tensor const&, bool)");
  EXPECT_EQ(sites[1].where(), "app.cpp:40");
  EXPECT_EQ(sites[1].library_entry, "");     // generated code, not a library
  EXPECT_EQ(sites[1].frames[0].file, stub);  // still in the stack
}

// A Python program: the Python line wins over every native frame, libtorch's and a native extension's alike.
TEST(LibraryFrames, APythonLineIsPreferredOverNativeFrames) {
  EventLog log;
  log.modules = {module(kCudart, "/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"),
                 module(kTorchCuda, "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"),
                 module(kTorchPython, "/venv/lib/python3.12/site-packages/torch/lib/libtorch_python.so"),
                 module(kExt, "/home/me/proj/build/my_ext.cpython-312-x86_64-linux-gnu.so"),
                 module(kPython, "/usr/bin/python3.12")};
  log.symbols = {{kCudart + 0x1000, "cudaMemcpyAsync", "", 0},
                 {kTorchCuda + 0x1000, "at::native::copy_kernel_cuda(at::TensorIterator&, bool)",
                  "/tmp/tmpxft_0000abcd_00000000-6_Copy.compute_120.cudafe1.cpp", 0},
                 {kTorchPython + 0x1000, "torch::autograd::THPVariable_copy_", "", 0},
                 {kExt + 0x1000, "my_op(at::Tensor)", "/home/me/proj/ext.cpp", 8},
                 {kPython + 0x1000, "_PyEval_EvalFrameDefault", "Python/ceval.c", 100}};
  log.stacks = {Stack{{kCudart + 0x1000, kTorchCuda + 0x1000, kTorchPython + 0x1000, kExt + 0x1000, kPython + 0x1000},
                      {{"/venv/lib/python3.12/site-packages/torch/_tensor.py", "copy_", 3},
                       {"/home/me/proj/train.py", "step", 12}}},
                Stack{{kCudart + 0x1000, kTorchCuda + 0x1000, kTorchPython + 0x1000, kPython + 0x1000},
                      {{"/venv/lib/python3.12/site-packages/torch/_tensor.py", "copy_", 3}}}};
  const std::vector<CallSite> sites = call_sites(log, {});
  EXPECT_EQ(sites[0].where(), "train.py:12");
  EXPECT_TRUE(sites[0].frame.is_python());
  EXPECT_EQ(sites[0].library_entry, "");
  // Only installed packages among the Python frames: still the Python frame, not the native extension.
  EXPECT_EQ(sites[1].where(), "_tensor.py:3");
  EXPECT_TRUE(sites[1].frame.is_python());
  // Without Python frames: the extension is the user's code, called into libtorch; the interpreter never is.
  log.stacks[0].python.clear();
  log.stacks[1].python.clear();
  const std::vector<CallSite> native = call_sites(log, {});
  EXPECT_EQ(native[0].where(), "ext.cpp:8");
  EXPECT_EQ(native[0].library_entry, "torch::autograd::THPVariable_copy_");
  EXPECT_EQ(native[1].frame.function, "at::native::copy_kernel_cuda(at::TensorIterator&, bool)");  // the fallback
  EXPECT_EQ(native[1].library_entry, "");
}

// ---- the writers ----

// One blocking pageable device-to-host cudaMemcpy per stack, 300 us each.
struct Copies {
  Analysis analysis;
  ReportData data;
  explicit Copies(EventLog log) : log_(std::move(log)) {
    log_.run.threshold_ns = 100'000;
    log_.api_names = {"cudaMemcpy"};
    uint64_t t = 0;
    for (uint32_t stack = 1; stack <= log_.stacks.size(); ++stack) {
      ApiCall c;
      c.correlation_id = stack;
      c.start_ns = t;
      c.end_ns = t + 300'000;
      c.call.api = rules::ApiKind::Copy;
      c.call.direction = rules::CopyDirection::DeviceToHost;
      c.call.src = rules::MemoryKind::Device;
      c.call.dst = rules::MemoryKind::Pageable;
      c.call.bytes = 1 << 20;
      c.stack = stack;
      log_.calls.push_back(c);
      GpuOp op;
      op.kind = GpuOpKind::Memcpy;
      op.correlation_id = c.correlation_id;
      op.start_ns = t + 2'000;
      op.end_ns = t + 298'000;
      op.stream_id = 7;
      op.copy_kind = 2;  // DtoH
      op.bytes = c.call.bytes;
      log_.ops.push_back(op);
      t += 400'000;
    }
    AnalysisOptions o;
    o.threshold_ns = log_.run.threshold_ns;
    analysis = analyze(log_, o);
    data = make_report(log_, analysis);
    data.source_root = "/src";
  }
  template <typename Write>
  std::string text(Write write) const {
    std::ostringstream o;
    write(o, data);
    return o.str();
  }

 private:
  EventLog log_;
};

TEST(LibraryFrames, WritersNameTheEntry) {
  const Copies run(cublas_log());
  ASSERT_EQ(run.data.rows.size(), 1u);
  std::ostringstream summary;
  write_summary(summary, run.data, 0);
  EXPECT_NE(summary.str().find("] cudaMemcpy in cublasDgemv_v2, called at UnifiedMemoryStreams.cu:219 in run(Task&)\n"),
            std::string::npos)
      << summary.str();
  const std::string json = run.text(write_json);
  EXPECT_NE(json.find("\"library_entry\": \"cublasDgemv_v2\""), std::string::npos) << json;
  ReportFile back;
  std::string error;
  ASSERT_TRUE(parse_report(json, "r.json", back, error)) << error;
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_EQ(back.rows[0].site.library_entry, "cublasDgemv_v2");
  const std::string sarif = run.text(write_sarif);
  EXPECT_NE(sarif.find("Inside cublasDgemv_v2, called at this location."), std::string::npos) << sarif;
  EXPECT_NE(sarif.find("\"libraryEntry\": \"cublasDgemv_v2\""), std::string::npos) << sarif;
}

// A site outside any library: the reports keep their form, and a report without the field reads back as before.
TEST(LibraryFrames, ReportsWithoutAnEntryAreUnchanged) {
  EventLog log = cublas_log();
  log.stacks[0].frames = {kCudart + 0x1000, 0x401000, 0x402000};
  const Copies run(log);
  std::ostringstream summary;
  write_summary(summary, run.data, 0);
  EXPECT_NE(summary.str().find("] cudaMemcpy at UnifiedMemoryStreams.cu:219 in run(Task&)\n"), std::string::npos)
      << summary.str();
  const std::string json = run.text(write_json);
  EXPECT_EQ(json.find("library_entry"), std::string::npos) << json;
  EXPECT_EQ(run.text(write_sarif).find("Inside "), std::string::npos);
  ReportFile back;
  std::string error;
  ASSERT_TRUE(parse_report(json, "r.json", back, error)) << error;
  EXPECT_EQ(back.rows[0].site.library_entry, "");
  // A wrong type is an error like any other field's.
  std::string bad = json;
  bad.replace(bad.find("\"count\": "), 0, "\"library_entry\": 7, ");
  EXPECT_FALSE(parse_report(bad, "r.json", back, error));
  EXPECT_NE(error.find("library_entry"), std::string::npos) << error;
}

// ---- inlined frames, symbolized by addr2line as a report does ----

// The runtime linked statically into the program has no line information and is skipped by its name; a function of
// the user's named like it has its file and line and is the site.
TEST(InlinedFrames, AUserFunctionNamedLikeTheRuntimeIsTheUsers) {
  EventLog log;
  log.modules = {Module{kProg, kProg + 0x100000, 0, "/src/simpleCudaGraphs"}};
  log.symbols = {{0x401000, "cudaGraphLaunch", "", 0},
                 {0x402000, "cudaGraphsManual(float*, float*, double*, int)", "/src/simpleCudaGraphs.cu", 240},
                 {0x402000, "main", "/src/simpleCudaGraphs.cu", 410}};
  log.stacks = {Stack{{0x401000, 0x402000}, {}}};
  const CallSite s = call_sites(log, {})[0];
  EXPECT_EQ(s.where(), "simpleCudaGraphs.cu:240");
  EXPECT_EQ(s.frames.size(), 2u);
}

// The line of `marker` in the test program's source.
int line_of(const std::string& marker) {
  std::ifstream in(INLINE_SITE_SOURCE);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.ends_with("// " + marker)) return n;
  }
  return -1;
}

// inline_site_prog (-O2 -g) calls sink() from three functions forced inline into main; the return addresses it
// prints symbolize to the inlined functions' lines, and the site is that line, not main's. One of them is named like
// a CUDA runtime function (cudaGraphsManual, as in NVIDIA's simpleCudaGraphs) and is the user's code all the same.
TEST(InlinedFrames, TheSiteIsTheInlinedFunctionsLine) {
  FILE* p = popen(INLINE_SITE_PROG, "r");
  ASSERT_NE(p, nullptr);
  constexpr size_t kCalls = 3;
  unsigned long long ret[kCalls] = {}, base[kCalls] = {};
  int read = 0;
  for (size_t i = 0; i < kCalls; ++i) read += std::fscanf(p, "%llx %llx", &ret[i], &base[i]);
  ASSERT_EQ(pclose(p), 0);
  ASSERT_EQ(read, 2 * static_cast<int>(kCalls));
  EventLog log;
  log.modules = {Module{base[0], base[0] + 0x10000000, base[0], INLINE_SITE_PROG}};
  for (size_t i = 0; i < kCalls; ++i) {
    ASSERT_EQ(base[i], base[0]);
    log.stacks.push_back(Stack{{ret[i]}, {}});
  }
  resolve_symbols(log);
  const std::vector<CallSite> sites = call_sites(log, {});
  const struct {
    const char* function;  // null: not checked
    const char* marker;
  } want[kCalls] = {{"inlined_step", "CALL_IN_INLINED_STEP"},
                    {"cudaGraphsManual", "CALL_IN_CUDA_GRAPHS_MANUAL"},
                    // binutils' addr2line (2.40) names an inlined function of internal linkage after its caller
                    // (llvm-symbolizer names it right); its line is right all the same.
                    {nullptr, "CALL_IN_STATIC_STEP"}};
  for (size_t i = 0; i < kCalls; ++i) {
    const CallSite& s = sites[i];
    SCOPED_TRACE(want[i].marker);
    // Inlined: one address, two frames (the inlined function, then main).
    ASSERT_EQ(s.frames.size(), 2u);
    EXPECT_EQ(s.frames[1].function, "main");
    EXPECT_EQ(s.frames[1].line, line_of(std::string(want[i].marker) + "_IN_MAIN"));
    if (want[i].function) {
      EXPECT_EQ(s.frame.function.substr(0, s.frame.function.find('(')), want[i].function);
    }
    EXPECT_EQ(s.where(), "inline_site_prog.cpp:" + std::to_string(line_of(want[i].marker)));
  }
}

// The inline_site_prog's stacks, as TheSiteIsTheInlinedFunctionsLine reads them.
EventLog inline_site_log() {
  EventLog log;
  FILE* p = popen(INLINE_SITE_PROG, "r");
  if (!p) return log;
  unsigned long long ret = 0, base = 0;
  while (std::fscanf(p, "%llx %llx", &ret, &base) == 2) {
    if (log.modules.empty()) log.modules = {Module{base, base + 0x10000000, base, INLINE_SITE_PROG}};
    log.stacks.push_back(Stack{{ret}, {}});
  }
  pclose(p);
  return log;
}

// A program that set SIGCHLD to SIG_IGN: the kernel reaps addr2line itself and waitpid() fails with ECHILD. The
// symbolizer retried it forever, and the program never ended (issue 22). It finishes now, with the symbols.
TEST(Symbolize, FinishesWhenTheProgramIgnoresSigchld) {
  auto log = std::make_shared<EventLog>(inline_site_log());
  ASSERT_GE(log->stacks.size(), 3u);
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGCHLD, &ignore, &old);
  auto result = std::make_shared<std::promise<size_t>>();
  std::future<size_t> done = result->get_future();
  // Detached: a symbolizer that never returns must fail the test, not hang it.
  std::thread([log, result] { result->set_value(resolve_symbols(*log)); }).detach();
  const bool finished = done.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  sigaction(SIGCHLD, &old, nullptr);
  ASSERT_TRUE(finished) << "resolve_symbols still running after 20 s with SIGCHLD ignored";
  EXPECT_EQ(done.get(), 0u);
  EXPECT_GE(log->symbols.size(), 3u);
}

// Symbolization has a time limit: what it could not resolve in time is counted, and keeps module+offset.
TEST(Symbolize, StopsAtItsTimeLimitAndSaysHowMuchWasLeft) {
  EventLog log = inline_site_log();
  ASSERT_GE(log.stacks.size(), 3u);
  EXPECT_GE(resolve_symbols(log, std::chrono::milliseconds(0)), 3u);
  EXPECT_TRUE(log.symbols.empty());
  EXPECT_EQ(resolve_symbols(log), 0u);
  EXPECT_GE(log.symbols.size(), 3u);
}

}  // namespace
}  // namespace asynccheck::report
