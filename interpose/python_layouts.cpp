#include "interpose/python_layouts.h"

namespace asynccheck {
namespace {

// The numbers below were taken on x86-64 Linux. Other targets get no table (python_layout_for) until the test
// python.layout_* has run there.
#if defined(__x86_64__)
constexpr bool kTargetChecked = true;
#else
constexpr bool kTargetChecked = false;
#endif

// What 3.11, 3.12 and 3.13 share: the object header, bytes, and the str header up to its state bit-field, whose
// bits GCC and Clang allocate from the low one: interned:2, kind:3, compact:1, ascii:1, then ready:1 (3.11) or
// statically_allocated:1 (3.12+).
constexpr PythonLayout with_shared_objects(PythonLayout l) {
  l.object_type = 8;
  l.bytes_size = 16;
  l.bytes_sval = 32;
  l.str_length = 16;
  l.str_state = 32;
  l.state_kind_mask = 0x1c;
  l.state_kind_shift = 2;
  l.state_compact = 0x20;
  l.state_ascii = 0x40;
  return l;
}

// Checked against 3.11.2 (Debian 12's python3.11-dev) and 3.11.7's headers: the same numbers.
constexpr PythonLayout k311 = [] {
  PythonLayout l;
  l.minor = 11;
  l.through_cframe = true;
  l.tstate_cframe = 56;
  l.cframe_current_frame = 8;  // after uint8_t use_tracing
  l.frame_code = 32;           // f_func, f_globals, f_builtins, f_locals come first in 3.11
  l.frame_previous = 48;
  l.frame_instr = 56;
  l.frame_owner = 69;  // after int stacktop, bool is_entry
  l.owner_max = 2;     // FRAME_OWNED_BY_THREAD, _GENERATOR, _FRAME_OBJECT
  l.code_filename = 112;
  l.code_name = 120;
  l.code_linetable = 136;
  l.code_firstlineno = 72;
  l.code_firsttraceable = 168;
  l.code_code_adaptive = 184;
  l.ascii_data = 48;  // PyASCIIObject still has wchar_t *wstr in 3.11
  l.compact_data = 72;
  l.state_ready = 0x80;
  l.line_from_address_range = true;
  return with_shared_objects(l);
}();

// Checked against 3.12.1's headers.
constexpr PythonLayout k312 = [] {
  PythonLayout l;
  l.minor = 12;
  l.through_cframe = true;
  l.tstate_cframe = 56;
  l.cframe_current_frame = 0;  // use_tracing is gone in 3.12
  l.frame_code = 0;
  l.frame_previous = 8;
  l.frame_instr = 56;
  l.frame_owner = 70;  // after int stacktop, uint16_t return_offset
  l.owner_cstack = 3;
  l.owner_max = 3;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_linetable = 136;
  l.code_firstlineno = 68;
  l.code_firsttraceable = 176;
  l.code_code_adaptive = 192;
  l.ascii_data = 40;  // no wstr from 3.12 on
  l.compact_data = 56;
  return with_shared_objects(l);
}();

// Checked against 3.13.0's headers (the default build; a free-threaded one has another object header).
constexpr PythonLayout k313 = [] {
  PythonLayout l = k312;
  l.minor = 13;
  l.through_cframe = false;  // _PyCFrame is gone: the thread state points at its innermost frame
  l.tstate_cframe = 0;
  l.tstate_current_frame = 72;
  l.code_firsttraceable = 184;
  l.code_code_adaptive = 200;
  return with_shared_objects(l);
}();

}  // namespace

const PythonLayout* python_layout_for(unsigned long version_hex) {
  if (!kTargetChecked || (version_hex >> 24) != 3) return nullptr;
  switch ((version_hex >> 16) & 0xff) {
    case 11: return &k311;
    case 12: return &k312;
    case 13: return &k313;
    default: return nullptr;
  }
}

}  // namespace asynccheck
