#include "report/json_value.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "analysis/utf8.h"

namespace asynccheck::report {

std::string_view json_type_name(JsonValue::Type type) {
  switch (type) {
    case JsonValue::Type::Null: return "null";
    case JsonValue::Type::Bool: return "true/false";
    case JsonValue::Type::Number: return "a number";
    case JsonValue::Type::String: return "a string";
    case JsonValue::Type::Array: return "an array";
    case JsonValue::Type::Object: return "an object";
  }
  return "?";
}

std::optional<uint64_t> JsonValue::uint64() const {
  if (type_ != Type::Number || !integral_ || text_[0] == '-') return std::nullopt;
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (ec != std::errc() || p != text_.data() + text_.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> JsonValue::int64() const {
  if (type_ != Type::Number || !integral_) return std::nullopt;
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(text_.data(), text_.data() + text_.size(), v);
  if (ec != std::errc() || p != text_.data() + text_.size()) return std::nullopt;
  return v;
}

std::optional<double> JsonValue::real() const {
  if (type_ != Type::Number) return std::nullopt;
  return std::strtod(text_.c_str(), nullptr);  // the grammar was checked: strtod reads all of it
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members_) {
    if (k == key) return &v;
  }
  return nullptr;
}

const JsonValue& JsonValue::operator[](std::string_view key) const {
  static const JsonValue kNull;
  const JsonValue* v = find(key);
  return v ? *v : kNull;
}

const JsonValue& JsonValue::operator[](size_t index) const {
  static const JsonValue kNull;
  return index < items_.size() ? items_[index] : kNull;
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  bool document(JsonValue& out, std::string& error) {
    if (s_.size() >= 3 && s_.substr(0, 3) == "\xEF\xBB\xBF")
      return fail_at(0, "a byte order mark (valid: UTF-8 without one)", error);
    space();
    if (!value(out, 0)) return report(error);
    space();
    if (p_ != s_.size()) {
      fail("unexpected " + shown() + " after the document (valid: one JSON value)");
      return report(error);
    }
    return true;
  }

 private:
  // ---- errors: the first one wins, with its position ----
  bool fail(const std::string& what) {
    if (what_.empty()) {
      what_ = what;
      at_ = p_;
    }
    return false;
  }
  bool fail_at(size_t at, const std::string& what, std::string& error) {
    p_ = at;
    fail(what);
    return report(error);
  }
  bool report(std::string& error) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error = std::to_string(line) + ":" + std::to_string(col) + ": " + what_;
    return false;
  }
  // What stands at the current position, for messages.
  std::string shown() const {
    if (p_ >= s_.size()) return "end of input";
    const auto c = static_cast<unsigned char>(s_[p_]);
    char buf[16];
    if (c >= 0x20 && c < 0x7f)
      std::snprintf(buf, sizeof buf, "'%c'", c);
    else
      std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
  }
  void position(JsonValue& v) const {
    v.line_ = line_;
    v.column_ = p_ - line_start_ + 1;
  }

  void space() {
    while (p_ < s_.size()) {
      const char c = s_[p_];
      if (c == '\n') {
        ++line_;
        line_start_ = p_ + 1;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++p_;
    }
  }

  bool value(JsonValue& v, size_t depth) {
    if (depth >= kMaxJsonDepth) return fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (p_ >= s_.size()) return fail("unexpected end of input (valid: a value)");
    position(v);
    const char c = s_[p_];
    if (c == '{') return object(v, depth);
    if (c == '[') return array(v, depth);
    if (c == '"') {
      v.type_ = JsonValue::Type::String;
      return string(v.text_);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(v);
    struct Literal {
      std::string_view word;
      JsonValue::Type type;
      bool value;
    };
    static constexpr Literal kLiterals[] = {{"true", JsonValue::Type::Bool, true},
                                            {"false", JsonValue::Type::Bool, false},
                                            {"null", JsonValue::Type::Null, false}};
    for (const Literal& l : kLiterals) {
      if (s_.substr(p_, l.word.size()) == l.word) {
        p_ += l.word.size();
        v.type_ = l.type;
        v.boolean_ = l.value;
        return true;
      }
    }
    return fail("unexpected " + shown() + " (valid: a value: object, array, string, number, true, false, null)");
  }

  bool object(JsonValue& v, size_t depth) {
    v.type_ = JsonValue::Type::Object;
    ++p_;
    space();
    if (p_ < s_.size() && s_[p_] == '}') return ++p_, true;
    while (true) {
      if (p_ >= s_.size() || s_[p_] != '"') return fail("expected a member name in double quotes, found " + shown());
      const size_t key_at = p_;
      std::string key;
      if (!string(key)) return false;
      if (v.find(key)) {
        p_ = key_at;
        return fail("duplicate member name \"" + key + "\" (valid: each name once per object)");
      }
      space();
      if (p_ >= s_.size() || s_[p_] != ':') return fail("expected ':' after a member name, found " + shown());
      ++p_;
      space();
      v.members_.emplace_back(std::move(key), JsonValue{});
      if (!value(v.members_.back().second, depth + 1)) return false;
      space();
      if (p_ < s_.size() && s_[p_] == '}') return ++p_, true;
      if (p_ >= s_.size() || s_[p_] != ',') return fail("expected ',' or '}' after a member, found " + shown());
      ++p_;
      space();
    }
  }

  bool array(JsonValue& v, size_t depth) {
    v.type_ = JsonValue::Type::Array;
    ++p_;
    space();
    if (p_ < s_.size() && s_[p_] == ']') return ++p_, true;
    while (true) {
      v.items_.emplace_back();
      if (!value(v.items_.back(), depth + 1)) return false;
      space();
      if (p_ < s_.size() && s_[p_] == ']') return ++p_, true;
      if (p_ >= s_.size() || s_[p_] != ',') return fail("expected ',' or ']' after an item, found " + shown());
      ++p_;
      space();
    }
  }

  bool digits() {
    const size_t start = p_;
    while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') ++p_;
    return p_ > start;
  }

  // RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(JsonValue& v) {
    const size_t start = p_;
    if (s_[p_] == '-') ++p_;
    if (p_ < s_.size() && s_[p_] == '0') {
      ++p_;
      if (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9')
        return fail("a number with a leading zero (valid: 0, or digits starting 1-9)");
    } else if (!digits()) {
      return fail("expected a digit, found " + shown());
    }
    bool integral = true;
    if (p_ < s_.size() && s_[p_] == '.') {
      ++p_;
      integral = false;
      if (!digits()) return fail("expected a digit after '.', found " + shown());
    }
    if (p_ < s_.size() && (s_[p_] == 'e' || s_[p_] == 'E')) {
      ++p_;
      integral = false;
      if (p_ < s_.size() && (s_[p_] == '+' || s_[p_] == '-')) ++p_;
      if (!digits()) return fail("expected a digit in the exponent, found " + shown());
    }
    v.type_ = JsonValue::Type::Number;
    v.integral_ = integral;
    v.text_ = std::string(s_.substr(start, p_ - start));
    return true;
  }

  bool hex4(uint32_t& cp) {
    cp = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      if (p_ >= s_.size()) return fail("\\u needs 4 hex digits, found end of input");
      const char c = s_[p_];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return fail("\\u needs 4 hex digits, found " + shown());
      cp = cp * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  bool escape(std::string& out) {
    const size_t at = p_;  // the backslash
    ++p_;
    if (p_ >= s_.size()) return fail("unfinished escape at end of input");
    const char e = s_[p_++];
    switch (e) {
      case '"': out += '"'; return true;
      case '\\': out += '\\'; return true;
      case '/': out += '/'; return true;
      case 'b': out += '\b'; return true;
      case 'f': out += '\f'; return true;
      case 'n': out += '\n'; return true;
      case 'r': out += '\r'; return true;
      case 't': out += '\t'; return true;
      case 'u': break;
      default:
        p_ = at;
        return fail(std::string("invalid escape '\\") + (e >= 0x20 && e < 0x7f ? std::string(1, e) : "?") +
                    "' (valid: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
    }
    uint32_t cp = 0;
    if (!hex4(cp)) return false;
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      p_ = at;
      return fail("a low surrogate \\u escape without a high one before it (valid: a pair \\uD8xx\\uDCxx)");
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t low = 0;
      if (s_.substr(p_, 2) != "\\u" || (p_ += 2, !hex4(low)) || low < 0xDC00 || low > 0xDFFF) {
        if (!what_.empty()) return false;
        p_ = at;
        return fail("a high surrogate \\u escape without a low one after it (valid: a pair \\uD8xx\\uDCxx)");
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, cp);  // a code point: surrogates are paired or refused above
    return true;
  }

  // One UTF-8 character of a string, checked: nothing overlong, no surrogates, nothing above U+10FFFF.
  bool utf8_char(std::string& out) {
    const size_t n = utf8_length(s_, p_);
    if (n < 2) return fail("invalid UTF-8 at " + shown() + " (valid: UTF-8 text)");  // called for non-ASCII bytes
    out.append(s_.substr(p_, n));
    p_ += n;
    return true;
  }

  bool string(std::string& out) {
    const size_t open = p_;
    ++p_;
    while (true) {
      if (p_ >= s_.size()) {
        p_ = open;
        return fail("a string that never ends (no closing '\"')");
      }
      const auto c = static_cast<unsigned char>(s_[p_]);
      if (c == '"') return ++p_, true;
      if (c == '\\') {
        if (!escape(out)) return false;
      } else if (c < 0x20) {
        return fail("a raw control character " + shown() + " in a string (valid: an escape such as \\n or \\u00XX)");
      } else if (c < 0x80) {
        out += static_cast<char>(c);
        ++p_;
      } else if (!utf8_char(out)) {
        return false;
      }
    }
  }

  std::string_view s_;
  size_t p_ = 0;
  size_t line_ = 1, line_start_ = 0;  // for the positions of values (strings hold no raw newline)
  std::string what_;
  size_t at_ = 0;
};

bool parse_json(std::string_view text, JsonValue& out, std::string& error) {
  out = JsonValue{};
  return JsonParser(text).document(out, error);
}

}  // namespace asynccheck::report
