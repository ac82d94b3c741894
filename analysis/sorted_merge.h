// Sorted vectors of events grown a batch at a time: the feed's backlog (feed.cpp) and the analysis' window
// (streaming.cpp) keep their calls and GPU work in log order (before_in_log) this way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

namespace asynccheck {

// Sorts `v` by `less`, stably, moving each element once: a round's calls are the threads' buffers one after another,
// each nearly in order (appended as calls return: a nested call before the one that holds it), and an element is
// 144 bytes; sorting indices first costs a fraction of sorting the elements.
template <typename Vector, typename Less>
void sort_by(Vector& v, Less less) {
  if (std::is_sorted(v.begin(), v.end(), less)) return;
  if (v.size() > UINT32_MAX) {  // not from any real round; indices would not fit
    std::stable_sort(v.begin(), v.end(), less);
    return;
  }
  std::vector<uint32_t> order(v.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return less(v[a], v[b]); });
  Vector sorted;
  sorted.reserve(v.size());
  for (uint32_t i : order) sorted.push_back(std::move(v[i]));
  v = std::move(sorted);
}

// Adds `more` to `into`, both sorted by `less` after, stably (`into`'s elements first among equals). New events start
// after most of those held (the feed's backlog: all but the calls that were in flight, and work queued behind them;
// the analysis' window likewise): only the tail from the first new event on is merged.
template <typename Vector, typename Less>
void merge_into(Vector& into, Vector&& more, Less less) {
  sort_by(more, less);
  if (into.empty()) {  // the common case: no copy
    into = std::move(more);
    return;
  }
  if (more.empty()) return;
  const auto from = std::upper_bound(into.begin(), into.end(), more.front(), less);
  const auto offset = from - into.begin();
  const size_t mid = into.size();
  into.insert(into.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  std::inplace_merge(into.begin() + offset, into.begin() + static_cast<std::ptrdiff_t>(mid), into.end(), less);
}

}  // namespace asynccheck
