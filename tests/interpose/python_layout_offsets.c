/* Prints, from the CPython headers it is compiled against (Py_BUILD_CORE, for the internal ones), the offsets and
 * sizes that interpose/python_layouts.cpp tables, as "name=value" lines named as python_frames_probe.cpp names
 * them; test_python_layouts.py compares the two. Built only for the minor versions that have a table
 * (tests/interpose/CMakeLists.txt): the field names below are theirs. */
#define Py_BUILD_CORE 1
#include <Python.h>

#include <stdio.h>
#include <string.h>

#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"

#define SHOW(name, value) printf("%s=%lu\n", name, (unsigned long)(value))

/* The state bit-field of a str with only `set` applied, as the uint32_t the walk reads. */
#define STATE_WITH(set) \
  do { memset(&o, 0, sizeof o); set; memcpy(&state, &o.state, sizeof state); } while (0)

int main(void) {
  SHOW("version", PY_VERSION_HEX);
#if PY_VERSION_HEX >= 0x030D0000
  SHOW("tstate.current_frame", offsetof(PyThreadState, current_frame));
  SHOW("frame.code", offsetof(_PyInterpreterFrame, f_executable));
  SHOW("frame.instr", offsetof(_PyInterpreterFrame, instr_ptr));
#else
  SHOW("tstate.cframe", offsetof(PyThreadState, cframe));
  SHOW("cframe.current_frame", offsetof(_PyCFrame, current_frame));
  SHOW("frame.code", offsetof(_PyInterpreterFrame, f_code));
  SHOW("frame.instr", offsetof(_PyInterpreterFrame, prev_instr));
#endif
  SHOW("frame.previous", offsetof(_PyInterpreterFrame, previous));
  SHOW("frame.owner", offsetof(_PyInterpreterFrame, owner));
  SHOW("sizeof.owner", sizeof(((_PyInterpreterFrame *)0)->owner));
  SHOW("owner.generator", FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX >= 0x030C0000
  SHOW("owner.cstack", FRAME_OWNED_BY_CSTACK);
  SHOW("owner.max", FRAME_OWNED_BY_CSTACK); /* the last of enum _frameowner in 3.12 and 3.13 */
#else
  SHOW("owner.max", FRAME_OWNED_BY_FRAME_OBJECT); /* the last of enum _frameowner in 3.11 */
#endif
  SHOW("object.type", offsetof(PyObject, ob_type));
  SHOW("code.filename", offsetof(PyCodeObject, co_filename));
  SHOW("code.name", offsetof(PyCodeObject, co_name));
  SHOW("code.linetable", offsetof(PyCodeObject, co_linetable));
  SHOW("code.firstlineno", offsetof(PyCodeObject, co_firstlineno));
  SHOW("code.firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
  SHOW("sizeof.firsttraceable", sizeof(((PyCodeObject *)0)->_co_firsttraceable));
  SHOW("code.code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
  SHOW("sizeof.codeunit", sizeof(_Py_CODEUNIT));
  SHOW("bytes.size", offsetof(PyVarObject, ob_size));
  SHOW("bytes.sval", offsetof(PyBytesObject, ob_sval));
  SHOW("str.length", offsetof(PyASCIIObject, length));
  SHOW("str.state", offsetof(PyASCIIObject, state));
  SHOW("sizeof.ascii", sizeof(PyASCIIObject));
  SHOW("sizeof.compact", sizeof(PyCompactUnicodeObject));
  PyASCIIObject o;
  unsigned int state = 0;
  STATE_WITH(o.state.kind = 7);
  SHOW("state.kind_mask", state);
  SHOW("state.kind_shift", __builtin_ctz(state));
  STATE_WITH(o.state.compact = 1);
  SHOW("state.compact_mask", state);
  STATE_WITH(o.state.ascii = 1);
  SHOW("state.ascii_mask", state);
#if PY_VERSION_HEX < 0x030C0000
  STATE_WITH(o.state.ready = 1);
  SHOW("state.ready_mask", state);
#endif
  SHOW("range.size", sizeof(PyCodeAddressRange));
  SHOW("range.ar_start", offsetof(PyCodeAddressRange, ar_start));
  SHOW("range.ar_end", offsetof(PyCodeAddressRange, ar_end));
  SHOW("range.ar_line", offsetof(PyCodeAddressRange, ar_line));
  SHOW("range.computed_line", offsetof(PyCodeAddressRange, opaque.computed_line));
  SHOW("range.lo_next", offsetof(PyCodeAddressRange, opaque.lo_next));
  SHOW("range.limit", offsetof(PyCodeAddressRange, opaque.limit));
  return 0;
}
