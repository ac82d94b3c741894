// A small strict JSON reader (RFC 8259): what `asynccheck merge` reads reports with, and what the tests read the
// writers' output with. Strict on purpose: a report is written by a program, so anything that is not exactly JSON
// is damage worth naming, with its line and column.
//
// - The text must be UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF); strings decode every escape,
//   \u surrogate pairs included; a lone surrogate escape is an error.
// - Numbers keep their text; whole numbers in range read back exactly as uint64_t or int64_t (nanosecond totals
//   exceed a double's 53 bits), any number as a double.
// - Duplicate keys in one object are an error (a report never has them, and "which one wins" has no good answer).
// - Nesting deeper than kMaxJsonDepth is an error, so hostile input cannot exhaust the stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace asynccheck::report {

inline constexpr size_t kMaxJsonDepth = 256;

class JsonValue {
 public:
  enum class Type : uint8_t { Null, Bool, Number, String, Array, Object };

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }

  bool boolean() const { return boolean_; }            // false unless a Bool
  const std::string& string() const { return text_; }  // the decoded string; a number's text as written; else ""
  // A whole number (no fraction, no exponent) that fits, exactly; nullopt otherwise (also for "1.0" and "1e3").
  std::optional<uint64_t> uint64() const;
  std::optional<int64_t> int64() const;
  std::optional<double> real() const;  // any number (nearest double)

  const std::vector<JsonValue>& items() const { return items_; }  // an array's items, else empty
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }  // in file order
  size_t size() const { return type_ == Type::Object ? members_.size() : items_.size(); }
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const JsonValue* find(std::string_view key) const;  // an object's member, or nullptr
  // Convenience for walking a known document: a missing member or item is a null value.
  const JsonValue& operator[](std::string_view key) const;
  const JsonValue& operator[](size_t index) const;

  // Where the value starts in the text, 1-based (columns count bytes).
  size_t line() const { return line_; }
  size_t column() const { return column_; }

 private:
  friend class JsonParser;
  Type type_ = Type::Null;
  bool boolean_ = false;
  bool integral_ = false;  // a number written without fraction or exponent
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
  size_t line_ = 0, column_ = 0;
};

// Parses one JSON document (whitespace around it allowed). False with `error` = "LINE:COL: what is wrong", e.g.
// "3:17: expected ',' or '}' after a member, found 'x'"; `out` is then unspecified.
bool parse_json(std::string_view text, JsonValue& out, std::string& error);

// The name of a type for messages: "null", "true/false", "a number", "a string", "an array", "an object".
std::string_view json_type_name(JsonValue::Type type);

}  // namespace asynccheck::report
