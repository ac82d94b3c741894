// A shared library that a Python test loads with ctypes to call the Python frame walker (interpose/python_frames.h)
// from inside a running interpreter, the way a CUPTI callback calls it from inside a CUDA call.
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <thread>

#include "interpose/python_frames.h"
#include "interpose/python_layouts.h"

namespace {

// Writes `text` into `out` (NUL-terminated, truncated to `n`).
void put(const std::string& text, char* out, int n) {
  if (out != nullptr && n > 0) std::snprintf(out, static_cast<size_t>(n), "%s", text.c_str());
}

// Writes "file\tfunction\tline\n" per frame, innermost first, into `out`. Returns the number of frames, or -1 when
// libpython's functions are not found in the process.
int write_frames(char* out, int n) {
  if (!asynccheck::python_available()) return -1;
  const std::vector<asynccheck::PyFrame> frames = asynccheck::python_frames();
  std::string text;
  for (const asynccheck::PyFrame& f : frames) text += f.file + "\t" + f.function + "\t" + std::to_string(f.line) + "\n";
  put(text, out, n);
  return static_cast<int>(frames.size());
}

}  // namespace

#define PROBE_API extern "C" __attribute__((visibility("default")))

PROBE_API int asynccheck_test_python_frames(char* out, int n) { return write_frames(out, n); }

// The same, with a Python exception pending before the walk (as when a CUDA call is made while an error is being
// propagated, e.g. by a destructor): the walk must leave it in place, so ctypes.PyDLL raises it on return.
PROBE_API int asynccheck_test_python_frames_with_error(char* out, int n) {
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

// The walk from a thread the interpreter never saw (no thread state), like a CUDA library's worker thread: the
// number of frames it returned (0 expected), or -1 when libpython's functions are not found.
PROBE_API int asynccheck_test_python_frames_from_native_thread() {
  int count = -1;
  std::thread([&count] { count = write_frames(nullptr, 0); }).join();
  return count;
}

PROBE_API void asynccheck_test_pretend_python_version(unsigned long version_hex) {
  asynccheck::python_frames_pretend_version_for_test(version_hex);
}

// The layout table for `version_hex` as "name=value" lines, named as python_layout_offsets.c names the numbers it
// takes from CPython's headers. Returns -1 when there is no table for that version.
PROBE_API int asynccheck_test_python_layout(unsigned long version_hex, char* out, int n) {
  const asynccheck::PythonLayout* l = asynccheck::python_layout_for(version_hex);
  if (l == nullptr) return -1;
  std::string text;
  auto line = [&text](const char* name, unsigned long value) {
    text += std::string(name) + "=" + std::to_string(value) + "\n";
  };
  if (l->through_cframe) {
    line("tstate.cframe", l->tstate_cframe);
    line("cframe.current_frame", l->cframe_current_frame);
  } else {
    line("tstate.current_frame", l->tstate_current_frame);
  }
  line("frame.code", l->frame_code);
  line("frame.instr", l->frame_instr);
  line("frame.previous", l->frame_previous);
  line("frame.owner", l->frame_owner);
  line("sizeof.owner", sizeof(signed char));  // read as one byte
  line("owner.generator", static_cast<unsigned long>(l->owner_generator));
  if (l->owner_cstack >= 0) line("owner.cstack", static_cast<unsigned long>(l->owner_cstack));
  line("owner.max", static_cast<unsigned long>(l->owner_max));
  line("object.type", l->object_type);
  line("code.filename", l->code_filename);
  line("code.name", l->code_name);
  line("code.linetable", l->code_linetable);
  line("code.firstlineno", l->code_firstlineno);
  line("code.firsttraceable", l->code_firsttraceable);
  line("sizeof.firsttraceable", sizeof(int));  // read as an int
  line("code.code_adaptive", l->code_code_adaptive);
  line("sizeof.codeunit", l->code_unit);
  line("bytes.size", l->bytes_size);
  line("bytes.sval", l->bytes_sval);
  line("str.length", l->str_length);
  line("str.state", l->str_state);
  line("sizeof.ascii", l->ascii_data);
  line("sizeof.compact", l->compact_data);
  line("state.kind_mask", l->state_kind_mask);
  line("state.kind_shift", static_cast<unsigned long>(l->state_kind_shift));
  line("state.compact_mask", l->state_compact);
  line("state.ascii_mask", l->state_ascii);
  if (l->state_ready != 0) line("state.ready_mask", l->state_ready);
  line("range.size", sizeof(asynccheck::PythonAddressRange));
  line("range.ar_start", offsetof(asynccheck::PythonAddressRange, ar_start));
  line("range.ar_end", offsetof(asynccheck::PythonAddressRange, ar_end));
  line("range.ar_line", offsetof(asynccheck::PythonAddressRange, ar_line));
  line("range.computed_line", offsetof(asynccheck::PythonAddressRange, opaque.computed_line));
  line("range.lo_next", offsetof(asynccheck::PythonAddressRange, opaque.lo_next));
  line("range.limit", offsetof(asynccheck::PythonAddressRange, opaque.limit));
  put(text, out, n);
  return l->minor;
}
