#include "interpose/python_frames.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "interpose/python_frames_nogil.h"

namespace asynccheck {
namespace {

// CPython's objects, opaque: only pointers pass through here.
using Obj = void;
using PySsize = long;  // Py_ssize_t is ssize_t (long on the 64-bit Linux targets we build for)

struct Api {
  int (*is_initialized)() = nullptr;                 // Py_IsInitialized
  int (*gil_check)() = nullptr;                      // PyGILState_Check
  Obj* (*this_thread_state)() = nullptr;             // PyGILState_GetThisThreadState: this thread's, no GIL needed
  Obj* (*current_state)() = nullptr;                 // PyThreadState_GetUnchecked (3.13) / _PyThreadState_UncheckedGet
  Obj* (*state_frame)(Obj*) = nullptr;               // PyThreadState_GetFrame: new reference or NULL
  Obj* (*frame_code)(Obj*) = nullptr;                // PyFrame_GetCode: new reference
  Obj* (*frame_back)(Obj*) = nullptr;                // PyFrame_GetBack: new reference or NULL
  int (*frame_line)(Obj*) = nullptr;                 // PyFrame_GetLineNumber
  Obj* (*get_attr)(Obj*, Obj*) = nullptr;            // PyObject_GetAttr: new reference or NULL
  Obj* (*intern)(const char*) = nullptr;             // PyUnicode_InternFromString
  const char* (*utf8)(Obj*, PySsize*) = nullptr;     // PyUnicode_AsUTF8AndSize: borrowed, cached in the object
  void (*decref)(Obj*) = nullptr;                    // Py_DecRef (Py_DECREF is a macro over the layout)
  void (*err_fetch)(Obj**, Obj**, Obj**) = nullptr;  // PyErr_Fetch (deprecated in 3.12, still exported)
  void (*err_restore)(Obj*, Obj*, Obj*) = nullptr;   // PyErr_Restore
  void (*err_clear)() = nullptr;                     // PyErr_Clear
  int (*gc_disable)() = nullptr;                     // PyGC_Disable (3.10+): returns whether it was enabled
  int (*gc_enable)() = nullptr;                      // PyGC_Enable
  bool ok = false;
  // The GIL-free walk (python_frames_nogil.h): the running interpreter's layout, nullptr when it has none.
  const PythonLayout* layout = nullptr;
  PythonRuntime runtime;
};

template <typename Fn>
bool find(Fn& fn, const char* name) {
  void* p = dlsym(RTLD_DEFAULT, name);
  if (p == nullptr) return false;
  static_assert(sizeof fn == sizeof p);
  std::memcpy(&fn, &p, sizeof p);  // object pointer -> function pointer, as POSIX guarantees for dlsym
  return true;
}

template <typename T>
bool find_data(const T*& data, const char* name) {
  data = static_cast<const T*>(dlsym(RTLD_DEFAULT, name));
  return data != nullptr;
}

// The running interpreter's version as "3.N" from Py_GetVersion ("3.12.3 (main, ...) [GCC ...]"), to confirm
// Py_Version; -1 when the text does not start that way.
int minor_from_version_text(const char* text) {
  if (text == nullptr || std::strncmp(text, "3.", 2) != 0) return -1;
  char* end = nullptr;
  const long minor = std::strtol(text + 2, &end, 10);
  return end != text + 2 && *end == '.' ? static_cast<int>(minor) : -1;
}

// The layout for the GIL-free walk and the interpreter's objects it checks against, or a null layout. Py_Version
// (3.11+) names the version; Py_GetVersion must agree with it, and must not name a free-threaded build (3.13t:
// "3.13.0 experimental free-threading build (...)"), whose object header is another one. Run at resolve time,
// before any CUDA call of the program where capture::start resolves (Py_GetVersion formats into a static buffer).
void resolve_layout(Api& a) {
  const unsigned long* version = nullptr;
  const char* (*version_text)() = nullptr;
  if (!find_data(version, "Py_Version") || !find(version_text, "Py_GetVersion")) return;  // before 3.11: none
  const char* text = version_text();
  if (text == nullptr || std::strstr(text, "free-threading") != nullptr) return;
  if (minor_from_version_text(text) != static_cast<int>((*version >> 16) & 0xff)) return;
  const PythonLayout* layout = python_layout_for(*version);
  if (layout == nullptr) return;
  PythonRuntime& rt = a.runtime;
  if (!find_data(rt.code_type, "PyCode_Type") || !find_data(rt.unicode_type, "PyUnicode_Type") ||
      !find_data(rt.bytes_type, "PyBytes_Type")) {
    return;
  }
  if (layout->line_from_address_range ? !find(rt.check_line_number, "_PyCode_CheckLineNumber")
                                      : !find(rt.interpreter_frame_line, "PyUnstable_InterpreterFrame_GetLine")) {
    return;
  }
  a.layout = layout;
}

Api resolve() {
  Api a;
  // Py_IsInitialized first: a process without libpython stops at the first lookup.
  if (!find(a.is_initialized, "Py_IsInitialized")) return a;
  bool ok =
      find(a.gil_check, "PyGILState_Check") && find(a.this_thread_state, "PyGILState_GetThisThreadState") &&
      (find(a.current_state, "PyThreadState_GetUnchecked") || find(a.current_state, "_PyThreadState_UncheckedGet")) &&
      find(a.state_frame, "PyThreadState_GetFrame") && find(a.frame_code, "PyFrame_GetCode") &&
      find(a.frame_back, "PyFrame_GetBack") && find(a.frame_line, "PyFrame_GetLineNumber") &&
      find(a.get_attr, "PyObject_GetAttr") && find(a.intern, "PyUnicode_InternFromString") &&
      find(a.utf8, "PyUnicode_AsUTF8AndSize") && find(a.decref, "Py_DecRef") && find(a.err_fetch, "PyErr_Fetch") &&
      find(a.err_restore, "PyErr_Restore") && find(a.err_clear, "PyErr_Clear") && find(a.gc_disable, "PyGC_Disable") &&
      find(a.gc_enable, "PyGC_Enable");
  a.ok = ok;
  if (ok) resolve_layout(a);
  return a;
}

const Api& api() {
  static const Api a = resolve();  // thread-safe initialization; "not present" is cached like the rest
  return a;
}

// Attribute names, interned once with the GIL held and kept for the life of the interpreter (a process that
// finalizes Python and starts it again is not supported: the names would belong to the old interpreter).
Obj* g_co_filename = nullptr;
Obj* g_co_name = nullptr;

std::string text_attr(const Api& a, Obj* code, Obj* name) {
  std::string out;
  Obj* v = a.get_attr(code, name);
  if (v == nullptr) {
    a.err_clear();  // never call into the interpreter with an error of ours pending
    return out;
  }
  PySsize n = 0;
  if (const char* s = a.utf8(v, &n); s != nullptr && n >= 0) {
    out.assign(s, static_cast<size_t>(n));
  } else {
    a.err_clear();
  }
  a.decref(v);  // the code object keeps its own reference: `s` was only needed until the copy
  return out;
}

// The API path, for a thread that holds the GIL: the interpreter's own accessors, the more robust way (no layouts).
std::vector<PyFrame> frames_with_gil(const Api& a, Obj* tstate) {
  std::vector<PyFrame> out;
  // Nothing below runs Python code, so nothing can call CUDA and re-enter the capture (which would ignore the
  // call anyway: capture's thread-local guard): the code objects' attributes are plain members of a built-in
  // type, strings are converted without codecs, and the only allocations (frame objects that 3.11+ creates on
  // demand, the UTF-8 cache) could start a garbage collection, whose finalizers could run anything; the collector
  // is therefore off during the walk. Signal handlers run only between bytecodes.
  Obj *type = nullptr, *value = nullptr, *traceback = nullptr;
  a.err_fetch(&type, &value, &traceback);  // the program's pending exception, if any, survives the walk
  const int gc_was_enabled = a.gc_disable();
  if (g_co_filename == nullptr) g_co_filename = a.intern("co_filename");
  if (g_co_name == nullptr) g_co_name = a.intern("co_name");
  a.err_clear();
  if (g_co_filename != nullptr && g_co_name != nullptr) {
    Obj* frame = a.state_frame(tstate);  // NULL without an error when no Python code is running
    while (frame != nullptr && out.size() < kMaxPythonFrames) {
      PyFrame f;
      if (Obj* code = a.frame_code(frame)) {
        f.file = text_attr(a, code, g_co_filename);
        f.function = text_attr(a, code, g_co_name);
        a.decref(code);
      }
      const int line = a.frame_line(frame);
      f.line = line > 0 ? line : 0;
      out.push_back(std::move(f));
      Obj* back = a.frame_back(frame);  // NULL at the outermost frame (or, 3.11+, when it cannot be allocated)
      a.decref(frame);
      frame = back;
    }
    if (frame != nullptr) a.decref(frame);
  }
  if (gc_was_enabled == 1) a.gc_enable();
  a.err_restore(type, value, traceback);  // also drops any error the walk itself raised (e.g. MemoryError)
  return out;
}

std::atomic<unsigned long> g_pretend_version{0};  // python_frames_pretend_version_for_test; 0: the real one

}  // namespace

bool python_available() { return api().ok; }

std::vector<PyFrame> python_frames() {
  const Api& a = api();
  if (!a.ok || a.is_initialized() == 0) return {};
  // This thread's own thread state: a thread-local lookup, no GIL needed. NULL on a thread Python never ran on
  // (a CUDA library's worker, a thread of the program's C code): it has no Python frames.
  Obj* tstate = a.this_thread_state();
  if (tstate == nullptr) return {};
  // This thread holds the GIL and its state is the one attached (3.12+: this thread's; 3.10/3.11: the GIL
  // holder's; PyGILState_Check alone answers 1 whenever its check is disabled, with subinterpreters): the API.
  if (a.gil_check() == 1 && a.current_state() == tstate) return frames_with_gil(a, tstate);
  // Otherwise (PyTorch and CuPy release the GIL around their CUDA calls) the frames are read from memory, with
  // the layout verified for this interpreter's version; none without one. Taking the GIL here instead could
  // deadlock: the thread holding it may wait for a lock this thread holds, such as a caching allocator's.
  const unsigned long pretend = g_pretend_version.load(std::memory_order_relaxed);
  const PythonLayout* layout = a.layout;
  if (pretend != 0 && layout != nullptr) layout = python_layout_for(pretend) == layout ? layout : nullptr;
  if (layout == nullptr) return {};
  return python_frames_without_gil(*layout, a.runtime, tstate);
}

void python_frames_pretend_version_for_test(unsigned long version_hex) {
  g_pretend_version.store(version_hex, std::memory_order_relaxed);
}

}  // namespace asynccheck
