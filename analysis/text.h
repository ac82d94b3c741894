// Text formatted fast, for the paths that write millions of fields: a recording's events (analysis/recording.cpp: a
// live run writes every chunk of them on the recording's thread, a million calls a second in a flood) and the Chrome
// trace's JSON (report/trace_draw.h: millions of events of a dozen fields each). On both, std::ostream's cost per
// field (a sentry, the locale's facets, a virtual call) was most of the time the writing took
// (docs/performance-log.md).
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace asynccheck {

// A number written in lowercase hexadecimal without a prefix, as std::ostream writes it after std::hex.
struct Hex {
  uint64_t v;
};

// Fields formatted into a buffer of our own and appended to a string of the caller's a block at a time (at the
// latest when the Text goes). Fields are written as std::ostream writes them: integers in decimal (a bool as 0 or 1),
// Hex{} in lowercase hexadecimal. A one-byte integer must be cast to int first, as std::ostream would write it as a
// character. The buffer's paths are inline: a field costs a bounds check and a copy; only flush() is a call.
class Text {
 public:
  explicit Text(std::string& out) : out_(out) {}
  Text(const Text&) = delete;
  Text& operator=(const Text&) = delete;
  ~Text() { flush(); }
  // Appends what is buffered to the string: before anything else appends to it.
  [[gnu::noinline]] void flush() {
    out_.append(buf_, p_);
    p_ = buf_;
  }
  // The string's length once flushed.
  size_t size() const { return out_.size() + static_cast<size_t>(p_ - buf_); }

  Text& operator<<(std::string_view s) {
    if (s.size() > room()) {
      flush();
      if (s.size() > sizeof buf_) {
        out_.append(s);
        return *this;
      }
    }
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  Text& operator<<(const char* s) { return *this << std::string_view(s); }  // not the bool overload
  Text& operator<<(char c) {
    reserve(1);
    *p_++ = c;
    return *this;
  }
  Text& operator<<(bool v) { return *this << (v ? '1' : '0'); }
  template <typename Int, typename = std::enable_if_t<std::is_integral_v<Int>>>
  Text& operator<<(Int v) {
    static_assert(sizeof(Int) > 1, "std::ostream writes a one-byte integer as a character: cast it to int");
    reserve(kNumber);
    p_ = std::to_chars(p_, p_ + kNumber, v).ptr;
    return *this;
  }
  Text& operator<<(Hex h) {
    reserve(kNumber);
    p_ = std::to_chars(p_, p_ + kNumber, h.v, 16).ptr;
    return *this;
  }

 private:
  static constexpr size_t kNumber = 24;  // a 64-bit integer's digits and sign, with room to spare
  size_t room() const { return static_cast<size_t>(buf_ + sizeof buf_ - p_); }
  void reserve(size_t n) {
    if (room() < n) [[unlikely]]
      flush();
  }

  std::string& out_;
  char buf_[4096];
  char* p_ = buf_;
};

}  // namespace asynccheck
