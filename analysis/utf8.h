// UTF-8 encoding of one code point, shared by what reads text from the program (NVTX wide strings, CPython's str
// objects) and by the JSON reader's \u escapes. Header-only: interpose/python_text.cpp is also compiled into the
// Python test probe, which links none of our libraries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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

// The length of the UTF-8 character at s[i]: 1 for ASCII, 2 to 4 for a valid multi-byte one, 0 when the bytes there
// are not UTF-8 (a stray continuation byte, a cut sequence, an overlong form, a surrogate, past U+10FFFF). Shared by
// the JSON reader, which refuses such bytes, and the writers, which replace them (report/json.cpp).
inline size_t utf8_length(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80)
    return 1;
  else if (c >= 0xC2 && c <= 0xDF)
    n = 2, cp = c & 0x1Fu;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, cp = c & 0x0Fu;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, cp = c & 0x07u;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (d & 0x3Fu);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
    return 0;
  }
  return n;
}

}  // namespace asynccheck
