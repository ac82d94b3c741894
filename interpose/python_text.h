// The text of a CPython str object as UTF-8, read from its memory with a PythonLayout (python_layouts.h), for the
// GIL-free frame walk (python_frames_nogil.h): no call into the interpreter, no write to the object.
#pragma once

#include <string>

#include "interpose/python_layouts.h"

namespace asynccheck {

// The UTF-8 text of `str`, or "" when it is not an exact str (ob_type != `unicode_type`), not compact (a str
// subclass or a legacy string keeps its characters elsewhere), longer than kMaxPythonTextLength code points, or
// not encodable (a lone surrogate, as PyUnicode_AsUTF8AndSize refuses it too).
//
// The str's own utf8 cache is not read: CPython publishes its pointer before it copies the bytes in
// (unicode_fill_utf8), so another thread filling it, with the GIL, could be seen half written. The characters
// themselves never change after creation: they are converted here instead.
std::string python_str_text(const void* str, const PythonLayout& layout, const void* unicode_type);

inline constexpr long kMaxPythonTextLength = 1 << 16;

}  // namespace asynccheck
