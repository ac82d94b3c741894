// Call sites as people read them: short names for long C++ templates, module offsets (not addresses) for frames
// without line information, and stacks that stop at main.
#include <gtest/gtest.h>

#include <sstream>

#include "report/report.h"
#include "report/symbolize.h"

namespace asynccheck::report {
namespace {

TEST(ShortFunction, KeepsShortNamesAndElidesLongTemplatesAndParameters) {
  EXPECT_EQ(short_function("main"), "main");
  EXPECT_EQ(short_function("f(int)", 3), "f(...)");
  const std::string name =
      "void at::native::gpu_kernel_impl_nocast<at::native::AUnaryFunctor<float, float, float, "
      "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::AUnaryFunctor<float, "
      "float, float, at::native::binary_internal::MulFunctor<float> > const&)";
  EXPECT_EQ(short_function(name), "void at::native::gpu_kernel_impl_nocast<...>(...)");
  EXPECT_EQ(short_function(name, name.size()), name);
  EXPECT_EQ(short_function("at::cuda::(anonymous namespace)::Impl::allocate(unsigned long, void**)", 10),
            "at::cuda::(anonymous namespace)::Impl::allocate(...)");
}

TEST(ShortFunction, OperatorsAreNamesNotBrackets) {
  const std::string name =
      "ns::Functor<int, std::vector<long> >::operator()(std::vector<long> const&, int) const "
      "and some more text to make it long enough";
  EXPECT_EQ(short_function(name, 20),
            "ns::Functor<...>::operator()(...) const and some more text to make it long enough");
  EXPECT_EQ(short_function("bool ns::operator<(ns::A const&, ns::A const&) plus padding to be long", 10),
            "bool ns::operator<(...) plus padding to be long");
}

// A fault's place: the module that holds the instruction, by its base name, and the instruction's offset in that
// file (less the load bias, as a frame's); a bare address outside every module.
TEST(FaultPlace, NamesTheModuleAndTheOffsetInItsFile) {
  const std::vector<Module> modules = {{0x400000, 0x500000, 0, "/usr/bin/app"},
                                       {0x7f0000000000, 0x7f0000200000, 0x7f0000000000, "/usr/lib/libcupti.so.13"}};
  EXPECT_EQ(fault_place(0x7f00000838b0, 0, modules), "at libcupti.so.13+0x838b0, address 0x0");
  EXPECT_EQ(fault_place(0x401234, 0x1234, modules), "at app+0x401234, address 0x1234");  // not PIE: no bias
  EXPECT_EQ(fault_place(0x500000, 0x10, modules), "at 0x500000, address 0x10");          // one past app's end
  EXPECT_EQ(fault_place(0xdead, 0xbeef, {}), "at 0xdead, address 0xbeef");
  EXPECT_EQ(fault_place(0x401234, std::nullopt, modules), "at app+0x401234");  // the kernel gave no address
}

TEST(CallSite, WhereNamesFileLineOrModuleOffset) {
  CallSite s;
  EXPECT_EQ(s.where(), "unknown");
  s.frame = Frame{0x7f0000001234, "/usr/lib/libtorch_cuda.so", 0x1234, "f()", "", 0};
  EXPECT_EQ(s.where(), "libtorch_cuda.so+0x1234");
  s.frame.file = "/src/app/main.cu";
  s.frame.line = 42;
  EXPECT_EQ(s.where(), "main.cu:42");
}

// Stacks stop at main: what lies below is the C runtime's start-up.
TEST(CallSites, StopAtMainAndUseModuleOffsets) {
  EventLog log;
  log.modules.push_back(Module{0x400000, 0x500000, 0, "/app/prog"});
  log.modules.push_back(Module{0x7f0000000000, 0x7f0000100000, 0x7f0000000000, "/lib/libc.so.6"});
  log.stacks.push_back(Stack{{0x401000, 0x402000, 0x7f0000002000, 0x403000}, {}});
  log.symbols.push_back(Symbol{0x401000, "helper", "/app/prog.cu", 10});
  log.symbols.push_back(Symbol{0x402000, "main", "/app/prog.cu", 20});
  log.symbols.push_back(Symbol{0x7f0000002000, "__libc_start_call_main", "", 0});
  log.symbols.push_back(Symbol{0x403000, "_start", "", 0});
  const std::vector<CallSite> sites = call_sites(log, {});
  ASSERT_EQ(sites.size(), 1u);
  ASSERT_EQ(sites[0].frames.size(), 2u);
  EXPECT_EQ(sites[0].frame.function, "helper");
  EXPECT_EQ(sites[0].frames[1].function, "main");
  // A library frame gets its offset in the file, not its address.
  log.stacks[0].frames = {0x7f0000002000};
  EXPECT_EQ(call_sites(log, {})[0].frame.offset, 0x2000u);
}

// A Python program: libtorch's frames under a CUDA call, then the interpreter's, with the Python frames the
// capture read from the interpreter (innermost first).
EventLog python_log() {
  EventLog log;
  log.modules.push_back(Module{0x400000, 0x800000, 0, "/usr/bin/python3.12"});
  log.modules.push_back(
      Module{0x7f0000000000, 0x7f0000100000, 0x7f0000000000, "/usr/local/cuda/lib64/libcudart.so.12"});
  log.modules.push_back(Module{0x7f1000000000, 0x7f1000100000, 0x7f1000000000,
                               "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"});
  log.symbols.push_back(Symbol{0x7f0000001000, "cudaMemcpyAsync", "", 0});
  log.symbols.push_back(Symbol{0x7f1000002000, "at::native::copy_kernel_cuda(at::TensorIterator&, bool)", "", 0});
  log.symbols.push_back(Symbol{0x401000, "_PyEval_EvalFrameDefault", "Python/ceval.c", 100});
  log.symbols.push_back(Symbol{0x402000, "main", "Programs/python.c", 15});
  log.stacks.push_back(Stack{{0x7f0000001000, 0x7f1000002000, 0x401000, 0x402000},
                             {{"/venv/lib/python3.12/site-packages/torch/utils/_device.py", "__torch_function__", 104},
                              {"/home/me/proj/train.py", "step", 12},
                              {"/home/me/proj/train.py", "<module>", 30}}});
  return log;
}

// The call site is the user's Python line; the stack lists the Python frames, then the native ones from the first
// frame outside CUDA (libtorch) down to main.
TEST(CallSites, PythonSiteIsTheInnermostFrameOutsideInstalledPackages) {
  const std::vector<CallSite> sites = call_sites(python_log(), {});
  ASSERT_EQ(sites.size(), 1u);
  const CallSite& s = sites[0];
  EXPECT_TRUE(s.known());
  EXPECT_TRUE(s.frame.is_python());
  EXPECT_EQ(s.frame.module, "python");
  EXPECT_EQ(s.frame.file, "/home/me/proj/train.py");
  EXPECT_EQ(s.frame.function, "step");
  EXPECT_EQ(s.frame.line, 12);
  EXPECT_EQ(s.where(), "train.py:12");
  ASSERT_EQ(s.frames.size(), 6u);
  EXPECT_EQ(s.frames[0].function, "__torch_function__");
  EXPECT_EQ(s.frames[1].function, "step");
  EXPECT_EQ(s.frames[2].function, "<module>");
  EXPECT_TRUE(s.frames[2].is_python());
  EXPECT_EQ(s.frames[3].function, "at::native::copy_kernel_cuda(at::TensorIterator&, bool)");  // cudart skipped
  EXPECT_FALSE(s.frames[3].is_python());
  EXPECT_EQ(s.frames[3].offset, 0x2000u);
  EXPECT_EQ(s.frames[5].function, "main");
}

TEST(CallSites, PythonSiteSkipsDistPackagesAndFallsBackToTheInnermostFrame) {
  EventLog log = python_log();
  log.stacks[0].python = {{"/usr/lib/python3/dist-packages/cupy/_core/core.py", "get", 7},
                          {"site-packages/torch/_tensor.py", "item", 3},
                          {"/srv/my-site-packages/app.py", "run", 5}};  // not a site-packages/ directory
  EXPECT_EQ(call_sites(log, {})[0].where(), "app.py:5");
  // Only installed packages: the innermost frame, rather than no Python site at all.
  log.stacks[0].python = {{"/venv/lib/python3.12/site-packages/torch/_tensor.py", "item", 3},
                          {"/venv/lib/python3.12/site-packages/lib/run.py", "main", 9}};
  const CallSite s = call_sites(log, {})[0];
  EXPECT_EQ(s.where(), "_tensor.py:3");
  EXPECT_EQ(s.frame.function, "item");
  // A line the interpreter did not know: the file alone.
  log.stacks[0].python = {{"/home/me/proj/train.py", "step", 0}};
  EXPECT_EQ(call_sites(log, {})[0].where(), "train.py");
  // Without Python frames, the native site as before: libtorch's frame.
  log.stacks[0].python.clear();
  const CallSite native = call_sites(log, {})[0];
  EXPECT_FALSE(native.frame.is_python());
  EXPECT_EQ(native.frame.function, "at::native::copy_kernel_cuda(at::TensorIterator&, bool)");
  EXPECT_EQ(native.frames.size(), 3u);
}

// Findings aggregate per Python line: two lines reaching the same native code are two sites; one line reaching it
// through two native paths is one site. The summary names the Python line and function.
TEST(CallSites, FindingsAggregatePerPythonLine) {
  EventLog log = python_log();
  log.stacks[0].python = {{"/home/me/proj/train.py", "step", 12}};
  Stack other_line = log.stacks[0];
  other_line.python[0].line = 13;
  Stack other_path = log.stacks[0];
  other_path.frames.insert(other_path.frames.begin() + 2, 0x7f1000003000);
  log.stacks.push_back(other_line);
  log.stacks.push_back(other_path);
  log.api_names = {"cudaMemcpyAsync"};
  Analysis analysis;
  for (uint32_t stack : {1u, 2u, 3u}) {
    ApiCall c;
    c.stack = stack;
    log.calls.push_back(c);
    Finding f;
    f.call = log.calls.size() - 1;
    f.rule = f.predicted = rules::RuleId::CopyAsyncPageableH2D;
    f.level = rules::Level::Error;
    f.held_ns = 1'000'000 * stack;
    analysis.findings.push_back(f);
  }
  analysis.predicted.resize(log.calls.size());
  analysis.described.resize(log.calls.size());
  const std::vector<SiteRow> rows = aggregate(log, analysis, call_sites(log, {}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].site.where(), "train.py:12");  // 1 ms + 3 ms
  EXPECT_EQ(rows[0].count, 2u);
  EXPECT_EQ(rows[1].site.where(), "train.py:13");
  EXPECT_EQ(rows[1].count, 1u);
  EXPECT_NE(rows[0].fingerprint.find("|step|train.py"), std::string::npos) << rows[0].fingerprint;
  ReportData data = make_report(log, analysis);
  std::ostringstream out;
  write_summary(out, data, 0);
  EXPECT_NE(out.str().find("cudaMemcpyAsync at train.py:12 in step\n"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace asynccheck::report
