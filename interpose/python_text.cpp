#include "interpose/python_text.h"

#include <cstdint>

#include "analysis/utf8.h"

namespace asynccheck {
namespace {

template <typename Unit>
bool append_units(std::string& out, const char* data, long length) {
  for (long i = 0; i < length; ++i) {
    if (!append_utf8(out, python_field<Unit>(data, static_cast<size_t>(i) * sizeof(Unit)))) return false;
  }
  return true;
}

}  // namespace

std::string python_str_text(const void* str, const PythonLayout& layout, const void* unicode_type) {
  if (str == nullptr || python_field<const void*>(str, layout.object_type) != unicode_type) return {};
  const long length = python_field<long>(str, layout.str_length);
  const uint32_t state = python_field<uint32_t>(str, layout.str_state);
  if (length < 0 || length > kMaxPythonTextLength || (state & layout.state_compact) == 0) return {};
  if (layout.state_ready != 0 && (state & layout.state_ready) == 0) return {};
  const uint32_t kind = (state & layout.state_kind_mask) >> layout.state_kind_shift;
  const char* base = static_cast<const char*>(str);
  std::string out;
  if ((state & layout.state_ascii) != 0) {
    if (kind != 1) return {};
    out.assign(base + layout.ascii_data, static_cast<size_t>(length));
    return out;
  }
  out.reserve(static_cast<size_t>(length));
  const char* data = base + layout.compact_data;
  const bool ok = kind == 1   ? append_units<uint8_t>(out, data, length)
                  : kind == 2 ? append_units<uint16_t>(out, data, length)
                  : kind == 4 ? append_units<uint32_t>(out, data, length)
                              : false;
  if (!ok) out.clear();
  return out;
}

}  // namespace asynccheck
