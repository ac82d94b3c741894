// Where CPython keeps what the GIL-free frame walk reads (python_frames_nogil.h): byte offsets into its private
// structures (the thread state, _PyInterpreterFrame, code, bytes and str objects), one table per minor version.
// These structures change between minor versions and are not part of any API, so a table is used only for the
// exact major.minor it was written for; any other version gets none, never the nearest one.
//
// Each number was checked against the version's own headers (offsetof/sizeof with Py_BUILD_CORE: pycore_frame.h,
// cpython/pystate.h, cpython/code.h, cpython/unicodeobject.h, cpython/bytesobject.h), and is checked again by the
// test python.layout_* for every interpreter with headers on the machine (tests/interpose/python_layout_offsets.c
// prints the headers' numbers, test_python_layouts.py compares them with these tables).
//
// Builds whose object header differs (free-threaded 3.13t, Py_TRACE_REFS) are not covered by these tables:
// python_frames.cpp refuses a free-threaded interpreter, and the walk's type checks stop on the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace asynccheck {

struct PythonLayout {
  int minor = 0;  // 3.<minor>

  // PyThreadState to its innermost _PyInterpreterFrame: 3.11/3.12 through tstate->cframe->current_frame (a _PyCFrame
  // on the C stack of the running eval loop, or the thread state's own root_cframe), 3.13 tstate->current_frame.
  bool through_cframe = false;
  size_t tstate_cframe = 0;         // offsetof(PyThreadState, cframe), through_cframe only
  size_t cframe_current_frame = 0;  // offsetof(_PyCFrame, current_frame), through_cframe only
  size_t tstate_current_frame = 0;  // offsetof(PyThreadState, current_frame), 3.13

  // _PyInterpreterFrame
  size_t frame_code = 0;      // f_code (3.11, 3.12), f_executable (3.13): the code object, strong reference
  size_t frame_previous = 0;  // previous: the caller's frame, NULL at the thread's outermost frame
  size_t frame_instr = 0;     // prev_instr (3.11, 3.12), instr_ptr (3.13): a _Py_CODEUNIT* into the code's bytecode
  size_t frame_owner = 0;     // owner, a char
  int owner_generator = 1;    // FRAME_OWNED_BY_GENERATOR
  int owner_cstack = -1;      // FRAME_OWNED_BY_CSTACK (3.12+: the eval loop's entry shim frame), -1 when none
  int owner_max = 0;          // the largest owner value: anything above is not a frame of this layout

  // PyObject
  size_t object_type = 0;  // ob_type

  // PyCodeObject
  size_t code_filename = 0;        // co_filename, a str
  size_t code_name = 0;            // co_name, a str
  size_t code_linetable = 0;       // co_linetable, a bytes (3.11's line computation reads it)
  size_t code_firstlineno = 0;     // co_firstlineno, an int
  size_t code_firsttraceable = 0;  // _co_firsttraceable, an int: the first instruction of a complete frame
  size_t code_code_adaptive = 0;   // co_code_adaptive: the bytecode, inline; _PyCode_CODE(co) points here
  size_t code_unit = 2;            // sizeof(_Py_CODEUNIT)

  // PyBytesObject
  size_t bytes_size = 0;  // ob_size
  size_t bytes_sval = 0;  // ob_sval: the bytes, inline

  // str: PyASCIIObject, PyCompactUnicodeObject
  size_t str_length = 0;         // length, in code points
  size_t str_state = 0;          // the state bit-field, read as one uint32_t
  size_t ascii_data = 0;         // sizeof(PyASCIIObject): a compact ASCII string's characters follow it
  size_t compact_data = 0;       // sizeof(PyCompactUnicodeObject): a compact non-ASCII string's characters follow it
  uint32_t state_kind_mask = 0;  // kind: 1, 2 or 4 bytes a code point, in bits (state & mask) >> kind_shift
  int state_kind_shift = 0;
  uint32_t state_compact = 0;  // compact: the characters are inline, after the header
  uint32_t state_ascii = 0;    // ascii: every character < 128
  uint32_t state_ready = 0;    // ready (3.11 only; 0 where the bit does not exist): the canonical data exists

  // 3.11: the line is computed with PythonAddressRange and _PyCode_CheckLineNumber (python_frames_nogil.cpp);
  // 3.12+: PyUnstable_InterpreterFrame_GetLine.
  bool line_from_address_range = false;
};

// PyCodeAddressRange (cpython/code.h), which _PyCode_CheckLineNumber advances over a code object's co_linetable:
// the same in 3.11, 3.12 and 3.13.
struct PythonAddressRange {
  int ar_start;
  int ar_end;
  int ar_line;
  struct {
    int computed_line;
    const uint8_t* lo_next;
    const uint8_t* limit;
  } opaque;
};

// A field of a CPython structure at `offset` bytes into it, copied out (memcpy: the memory is CPython's, not
// objects of ours to alias).
template <typename T>
T python_field(const void* base, size_t offset) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + offset, sizeof v);
  return v;
}

// The layout of CPython `version_hex` (PY_VERSION_HEX's form, as CPython exports it in Py_Version: 0x030C03F0 is
// 3.12.3 final), or nullptr when its major.minor has no verified table. Patch level and release level are not
// looked at: patch releases are taken to keep these structures (they did for the releases checked, see the
// tables), and the walk's type checks stop on a frame whose code object is not where the table says.
const PythonLayout* python_layout_for(unsigned long version_hex);

}  // namespace asynccheck
