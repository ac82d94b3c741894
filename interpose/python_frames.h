// The Python frames of the calling thread, for the call sites of a Python program ("train.py:12 in step" rather
// than an address in libtorch). Read through CPython's exported C API only (no struct layouts), found in the
// process with dlsym(RTLD_DEFAULT): Debian's and Ubuntu's python3 link libpython into the executable, a shared
// build (pyenv, conda) has it as a dependency of the executable; both are in the global scope.
//
// Frames are read only when this thread holds the GIL. A thread that released it (PyTorch releases it around
// every ATen call: .item(), .to(), nonzero; CuPy around many runtime calls) gets no Python frames: reading the
// interpreter without the GIL would need its private structures, and taking the GIL inside a CUDA call can
// deadlock (the thread holding the GIL may wait for a lock this thread holds, such as a caching allocator's).
// Such calls keep their native call site.
//
// CPython 3.10 to 3.13 (PyGC_Disable, the oldest function needed, is 3.10's). Only on the path of the calls that
// matter (capture_stack), never on an ordinary launch or copy.
#pragma once

#include <vector>

#include "analysis/events.h"

namespace asynccheck {

inline constexpr int kMaxPythonFrames = 32;

// Looks up libpython's functions in the process, once (later calls return the cached answer). Call it outside
// CUDA callbacks where possible (capture::start does): dlsym takes the dynamic loader's lock.
bool python_available();

// The calling thread's Python frames, innermost first, at most kMaxPythonFrames; empty when libpython is not in
// the process, the interpreter is not initialized, or this thread does not hold the GIL. Never raises: the
// thread's pending Python exception, if any, is kept as it was.
std::vector<PyFrame> python_frames();

}  // namespace asynccheck
