// The valid name a mistyped one was probably meant to be, for "unknown option" messages.
#pragma once

#include <span>
#include <string_view>

namespace asynccheck {

// The name of `names` nearest to `word` by edit distance (insertions, deletions, substitutions and swaps of
// neighbours), when it is near enough to be a typo of it: at most 1 edit for words of up to 4 characters, else at
// most 2, and fewer than half the word's length; or the one name `word` is the beginning of (3 characters or
// more). Empty when none is near enough, or two are equally near.
std::string_view nearest_name(std::string_view word, std::span<const std::string_view> names);

}  // namespace asynccheck
