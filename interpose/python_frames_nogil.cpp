#include "interpose/python_frames_nogil.h"

#include <cstdint>

#include "interpose/python_text.h"

namespace asynccheck {
namespace {

// 3.11: the line of the instruction at byte offset `lasti` of `code`, as PyCode_Addr2Line computes it without its
// line array: _PyLineTable_InitAddressRange's start state over co_linetable, then _PyCode_CheckLineNumber. 3.11's
// PyCode_Addr2Line itself is not called: it prefers co->_co_linearray, which a tracing thread may be creating
// (the pointer is stored before the array is filled).
int line_from_address_range(const PythonLayout& l, const PythonRuntime& rt, const void* code, int lasti) {
  const int first_line = python_field<int>(code, l.code_firstlineno);
  if (lasti < 0) return first_line;
  const void* table = python_field<const void*>(code, l.code_linetable);
  if (table == nullptr || python_field<const void*>(table, l.object_type) != rt.bytes_type) return 0;
  const long size = python_field<long>(table, l.bytes_size);
  if (size < 0) return 0;
  const auto* data = reinterpret_cast<const uint8_t*>(table) + l.bytes_sval;
  PythonAddressRange range{-1, 0, -1, {first_line, data, data + size}};
  return rt.check_line_number(lasti, &range);  // reads the table, writes only `range`
}

// _PyInterpreterFrame_LASTI in bytes, as PyCode_Addr2Line takes it; -1 (the first line) when `instr` is not in
// the first 2 GiB after the bytecode.
int byte_offset(uintptr_t instr, uintptr_t bytecode) {
  if (instr < bytecode || instr - bytecode > 0x7fffffff) return -1;
  return static_cast<int>(instr - bytecode);
}

const void* innermost_frame(const PythonLayout& l, const void* tstate) {
  if (!l.through_cframe) return python_field<const void*>(tstate, l.tstate_current_frame);
  const void* cframe = python_field<const void*>(tstate, l.tstate_cframe);
  return cframe == nullptr ? nullptr : python_field<const void*>(cframe, l.cframe_current_frame);
}

}  // namespace

std::vector<PyFrame> python_frames_without_gil(const PythonLayout& l, const PythonRuntime& rt, const void* tstate) {
  std::vector<PyFrame> out;
  const bool have_line = l.line_from_address_range ? rt.check_line_number != nullptr && rt.bytes_type != nullptr
                                                   : rt.interpreter_frame_line != nullptr;
  if (tstate == nullptr || rt.code_type == nullptr || rt.unicode_type == nullptr || !have_line) return out;

  const void* frame = innermost_frame(l, tstate);
  for (int steps = 0; frame != nullptr && steps < kMaxPythonFrameSteps && out.size() < kMaxPythonFrames;
       ++steps, frame = python_field<const void*>(frame, l.frame_previous)) {
    const int owner = python_field<signed char>(frame, l.frame_owner);
    if (owner == l.owner_cstack) continue;        // the eval loop's entry shim: no Python code of its own
    if (owner < 0 || owner > l.owner_max) break;  // not a frame as this layout describes one
    const void* code = python_field<const void*>(frame, l.frame_code);
    if (code == nullptr || python_field<const void*>(code, l.object_type) != rt.code_type) break;

    // _PyFrame_IsIncomplete: a frame not owned by a generator is incomplete until its first RESUME (it may still be
    // creating its cells), which no API walk shows either. Addresses as integers: `instr` may point just before
    // the bytecode (a frame not started yet).
    const auto bytecode = reinterpret_cast<uintptr_t>(code) + l.code_code_adaptive;
    const auto instr = reinterpret_cast<uintptr_t>(python_field<const void*>(frame, l.frame_instr));
    const int first_traceable = python_field<int>(code, l.code_firsttraceable);
    if (owner != l.owner_generator && instr < bytecode + static_cast<uintptr_t>(first_traceable) * l.code_unit) {
      continue;
    }

    PyFrame f;
    f.file = python_str_text(python_field<const void*>(code, l.code_filename), l, rt.unicode_type);
    f.function = python_str_text(python_field<const void*>(code, l.code_name), l, rt.unicode_type);
    const int line = l.line_from_address_range ? line_from_address_range(l, rt, code, byte_offset(instr, bytecode))
                                               : rt.interpreter_frame_line(const_cast<void*>(frame));  // a read
    f.line = line > 0 ? line : 0;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace asynccheck
