// asynccheck_report_now(): the entry point a program (the Python package's pytest plugin, python/asynccheck) calls
// to have its report written before it exits, so that it can read the report itself: the same report the exit
// path would write, written once (core.h report_now). Exported like InitializeInjection (inject.cpp): looked up
// with dlsym(RTLD_DEFAULT) or ctypes.CDLL(None) in a process that has the library, under LD_PRELOAD, the
// asynccheck command or CUDA_INJECTION64_PATH alike.
#include "include/asynccheck.h"
#include "interpose/core.h"

// 0: written; 1: nothing more to write (monitoring off, whose report is written as at exit; already written; not
// started); 2: a report file could not be written.
extern "C" __attribute__((visibility("default"))) int asynccheck_report_now(void) {
  return asynccheck::core::report_now();
}
