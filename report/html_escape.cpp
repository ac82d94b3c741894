#include "report/html_parts.h"

namespace asynccheck::report {

std::string html_escape(std::string_view text) {
  // printable() after valid_utf8(): its \xHH escapes are ASCII, so the result stays valid UTF-8.
  const std::string shown = printable(valid_utf8(text), /*keep_newlines=*/true);
  std::string out;
  out.reserve(shown.size());
  for (char c : shown) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace asynccheck::report
