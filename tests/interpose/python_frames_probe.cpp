// A shared library that a Python test loads with ctypes to call the Python frame walker (interpose/python_frames.h)
// from inside a running interpreter, the way a CUPTI callback calls it from inside a CUDA call.
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "interpose/python_frames.h"

namespace {

// Writes "file\tfunction\tline\n" per frame, innermost first, into `out` (NUL-terminated, truncated to `n`).
// Returns the number of frames, or -1 when libpython's functions are not found in the process.
int write_frames(char* out, int n) {
  if (!asynccheck::python_available()) return -1;
  const std::vector<asynccheck::PyFrame> frames = asynccheck::python_frames();
  std::string text;
  for (const asynccheck::PyFrame& f : frames) text += f.file + "\t" + f.function + "\t" + std::to_string(f.line) + "\n";
  if (n > 0) std::snprintf(out, static_cast<size_t>(n), "%s", text.c_str());
  return static_cast<int>(frames.size());
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int asynccheck_test_python_frames(char* out, int n) {
  return write_frames(out, n);
}

// The same, with a Python exception pending before the walk (as when a CUDA call is made while an error is being
// propagated, e.g. by a destructor): the walk must leave it in place, so ctypes.PyDLL raises it on return.
extern "C" __attribute__((visibility("default"))) int asynccheck_test_python_frames_with_error(char* out, int n) {
  using SetString = void (*)(void*, const char*);
  void* set_string = dlsym(RTLD_DEFAULT, "PyErr_SetString");
  void* runtime_error = dlsym(RTLD_DEFAULT, "PyExc_RuntimeError");
  if (set_string == nullptr || runtime_error == nullptr) return -1;
  SetString set = nullptr;
  static_assert(sizeof set == sizeof set_string);
  __builtin_memcpy(&set, &set_string, sizeof set);
  set(*static_cast<void**>(runtime_error), "pending before the walk");
  return write_frames(out, n);
}
