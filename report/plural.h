// A count with its noun in the right number, for every line people read: "1 call", "2 calls", "1 process".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace asynccheck::report {

// "N noun" with `one` for N == 1 and `many` otherwise (empty: `one` + "s").
inline std::string counted(uint64_t n, std::string_view one, std::string_view many = {}) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many.empty() ? std::string(one) + "s" : many);
}

}  // namespace asynccheck::report
