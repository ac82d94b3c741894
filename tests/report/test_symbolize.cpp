// Call sites as people read them: short names for long C++ templates, module offsets (not addresses) for frames
// without line information, and stacks that stop at main.
#include <gtest/gtest.h>

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
}

TEST(ShortFunction, OperatorsAreNamesNotBrackets) {
  const std::string name = "ns::Functor<int, std::vector<long> >::operator()(std::vector<long> const&, int) const "
                           "and some more text to make it long enough";
  EXPECT_EQ(short_function(name, 20), "ns::Functor<...>::operator()(...) const and some more text to make it long enough");
  EXPECT_EQ(short_function("bool ns::operator<(ns::A const&, ns::A const&) plus padding to be long", 10),
            "bool ns::operator<(...) plus padding to be long");
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
  log.stacks.push_back(Stack{{0x401000, 0x402000, 0x7f0000002000, 0x403000}});
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

}  // namespace
}  // namespace asynccheck::report
