// The Python frames of the calling thread, for the call sites of a Python program ("train.py:12 in step" rather
// than an address in libtorch). CPython is found in the process with dlsym(RTLD_DEFAULT): Debian's and Ubuntu's
// python3 link libpython into the executable, a shared build (pyenv, conda) has it as a dependency of the
// executable; both are in the global scope.
//
// Two ways to read them, chosen per call:
// - The thread holds the GIL: through CPython's exported C API only (no struct layouts), the more robust way.
// - The thread released it (PyTorch releases it around every ATen call: .item(), .to(), nonzero; CuPy around many
//   runtime calls): straight from the interpreter's memory, with the layout of its private structures for its
//   exact minor version (python_layouts.h: CPython 3.11, 3.12, 3.13 on x86-64; not a free-threaded build), by a walk
//   that writes nothing, takes no lock and reads only this thread's own frames (python_frames_nogil.h says why
//   that is safe). Taking the GIL inside a CUDA call instead could deadlock (the thread holding the GIL may wait
//   for a lock this thread holds, such as a caching allocator's). Another version gets no frames there, and the
//   call keeps its native call site.
//
// CPython 3.10 to 3.13 with the GIL (PyGC_Disable, the oldest function needed, is 3.10's). Only on the path of the
// calls that matter (capture_stack), never on an ordinary launch or copy.
#pragma once

#include <vector>

#include "analysis/events.h"

namespace asynccheck {

inline constexpr int kMaxPythonFrames = 32;

// Looks up libpython's functions in the process, once (later calls return the cached answer). Call it outside
// CUDA callbacks where possible (capture::start does): dlsym takes the dynamic loader's lock.
bool python_available();

// The calling thread's Python frames, innermost first, at most kMaxPythonFrames; empty when libpython is not in
// the process, the interpreter is not initialized, this thread has no Python thread state, or it does not hold
// the GIL and the interpreter's version has no verified layout. Never raises: the thread's pending Python
// exception, if any, is kept as it was.
std::vector<PyFrame> python_frames();

// For tests only: the GIL-free walk behaves as if the interpreter were `version_hex` (Py_Version's form): a
// version without a layout, or with another one than the running interpreter's, reads no frames. 0 restores the
// real version.
void python_frames_pretend_version_for_test(unsigned long version_hex);

}  // namespace asynccheck
