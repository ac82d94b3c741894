// A host-only program built with -O2 -g (tests/report/CMakeLists.txt) for test_library_frames: functions forced
// inline into main call an external, never-inlined function, which prints its return address (inside the inlined
// code) and the program's load address, one line per call. The test symbolizes those addresses through addr2line
// as a report does and expects the inlined functions' lines, not main's. The marker comments name the lines.
#include <dlfcn.h>

#include <cstdio>

extern "C" __attribute__((noinline)) int sink(int x) {
  Dl_info info{};
  void* ret = __builtin_return_address(0);
  if (dladdr(ret, &info) == 0) return -1000;
  std::printf("%p %p\n", ret, info.dli_fbase);
  asm volatile("" ::: "memory");
  return x * 3;
}

inline __attribute__((always_inline)) int inlined_step(int x) {
  const int y = sink(x);  // CALL_IN_INLINED_STEP
  return y + 1;
}

// Named like a CUDA runtime function (NVIDIA's simpleCudaGraphs has one): still the user's code.
inline __attribute__((always_inline)) int cudaGraphsManual(int x) {
  const int y = sink(x + 1);  // CALL_IN_CUDA_GRAPHS_MANUAL
  return y + 2;
}

static inline __attribute__((always_inline)) int static_step(int x) {
  const int y = sink(x + 2);  // CALL_IN_STATIC_STEP
  return y + 3;
}

int main(int argc, char**) {
  const int a = inlined_step(argc);      // CALL_IN_INLINED_STEP_IN_MAIN
  const int b = cudaGraphsManual(argc);  // CALL_IN_CUDA_GRAPHS_MANUAL_IN_MAIN
  const int c = static_step(argc);       // CALL_IN_STATIC_STEP_IN_MAIN
  std::printf("%d %d %d\n", a, b, c);
  return a == 4 && b == 8 && c == 12 ? 0 : 1;
}
