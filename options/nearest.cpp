#include "options/nearest.h"

#include <algorithm>
#include <vector>

namespace asynccheck {
namespace {

// Damerau-Levenshtein distance (optimal string alignment): a swapped pair of letters is one typo, not two.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string_view nearest_name(std::string_view word, std::span<const std::string_view> names) {
  if (word.empty() || word.size() > 64) return {};  // a long word is no typo of a name; and the table stays small
  const size_t allowed = std::min<size_t>(word.size() <= 4 ? 1 : 2, (word.size() - 1) / 2);
  std::string_view best;
  size_t best_distance = allowed + 1;
  bool tie = false;
  for (std::string_view name : names) {
    const size_t d = edit_distance(word, name);
    if (d < best_distance) {
      best = name;
      best_distance = d;
      tie = false;
    } else if (d == best_distance) {
      tie = true;
    }
  }
  if (!best.empty() && !tie) return best;
  // Not a typo but a beginning: --over for --overwrite.
  std::string_view prefix_of;
  if (word.size() >= 3) {
    for (std::string_view name : names) {
      if (!name.starts_with(word)) continue;
      if (!prefix_of.empty()) return {};
      prefix_of = name;
    }
  }
  return prefix_of;
}

}  // namespace asynccheck
