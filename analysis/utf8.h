// UTF-8 encoding of one code point, shared by what reads text from the program (NVTX wide strings, CPython's str
// objects) and by the JSON reader's \u escapes. Header-only: interpose/python_text.cpp is also compiled into the
// Python test probe, which links none of our libraries.
#pragma once

#include <cstdint>
#include <string>

namespace asynccheck {

// Appends code point `c` as UTF-8; false, appending nothing, for a surrogate or a value past U+10FFFF.
inline bool append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    if (c >= 0xD800 && c <= 0xDFFF) return false;
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c <= 0x10FFFF) {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    return false;
  }
  return true;
}

}  // namespace asynccheck
