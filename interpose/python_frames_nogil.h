// The Python frames of the calling thread read straight from the interpreter's memory, for a thread that does not
// hold the GIL (PyTorch and CuPy release it around their CUDA calls). python_frames.cpp calls it only when the API
// path (which needs the GIL) cannot be taken, and only with a layout verified for the running interpreter.
//
// Why reading without the GIL is safe, and the rules the walk keeps:
// - It reads only the calling thread's own frame chain, from its own thread state. While this thread is inside a C
//   call made from Python, no other thread pushes or pops its frames (a running generator cannot be resumed
//   elsewhere either); the frames hold strong references to their code objects, and a code object's co_filename,
//   co_name and co_linetable never change. Other threads may create frame objects for these frames
//   (sys._current_frames), rewrite their bytecode (specialization, sys.monitoring) or their locals: none of that
//   is read here.
// - The thread state outlives the walk: only this thread deletes it (at its exit), except Py_FinalizeEx, which
//   frees the states of daemon threads still in C calls, but only after Py_IsInitialized turns 0, which
//   python_frames checks first (a walk already under way at that very instant is the one window left).
// - It writes to no Python object: no reference count changes, no API that returns a new reference or may allocate
//   (PyUnicode_AsUTF8AndSize fills a cache): strings are read by python_text.h.
// - It calls into the interpreter only for pure reads: PyUnstable_InterpreterFrame_GetLine (3.12+: PyCode_Addr2Line
//   over the frame's code and instruction) and _PyCode_CheckLineNumber (3.11), which read the code object's line
//   table and store only into the caller's stack (checked in the machine code of 3.11.7, 3.12.1 and 3.13.0).
// - It takes no lock and is bounded: at most kMaxPythonFrames frames, kMaxPythonFrameSteps links.
// - It fails safe on a layout that does not fit: a frame whose code object's ob_type is not PyCode_Type, or whose
//   owner is not one the layout knows, ends the walk; a NULL pointer ends it; a str that is not exactly a str
//   reads as "".
#pragma once

#include <vector>

#include "analysis/events.h"
#include "interpose/python_frames.h"  // kMaxPythonFrames
#include "interpose/python_layouts.h"

namespace asynccheck {

inline constexpr int kMaxPythonFrameSteps = 256;  // links followed, incomplete and shim frames included

// What the walk needs from the running interpreter besides its layout, found with dlsym by python_frames.cpp.
struct PythonRuntime {
  const void* code_type = nullptr;                 // &PyCode_Type
  const void* unicode_type = nullptr;              // &PyUnicode_Type
  const void* bytes_type = nullptr;                // &PyBytes_Type
  int (*interpreter_frame_line)(void*) = nullptr;  // PyUnstable_InterpreterFrame_GetLine (3.12+)
  int (*check_line_number)(int, void*) = nullptr;  // _PyCode_CheckLineNumber (3.11, and exported up to 3.13)
};

// The frames of `tstate` (this thread's PyThreadState), innermost first, at most kMaxPythonFrames; frames that
// are not yet complete (3.11+: before their first RESUME) and the eval loop's shim frames (3.12+) are skipped, as
// PyFrame_GetBack skips them. Empty when `runtime` lacks what `layout` needs.
std::vector<PyFrame> python_frames_without_gil(const PythonLayout& layout, const PythonRuntime& runtime,
                                               const void* tstate);

}  // namespace asynccheck
