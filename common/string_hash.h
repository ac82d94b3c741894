// A hash of strings that also takes string_views, for tables keyed by std::string that are looked up with views
// (with std::equal_to<>): finding a name seen before makes no string.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace asynccheck {

struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace asynccheck
