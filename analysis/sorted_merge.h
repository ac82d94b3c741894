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

// Sorts `v` by `less`, stably, moving each element about once, in place: a round's calls are the threads' buffers one
// after another, each nearly in order (appended as calls return: a nested call before the one that holds it), and
// an element is 136 bytes; sorting indices first costs a fraction of sorting the elements, and following the
// permutation's cycles needs no second vector of the round (the collecting thread's copy of it was part of a flood's
// peak memory).
template <typename Vector, typename Less>
void sort_by(Vector& v, Less less) {
  if (std::is_sorted(v.begin(), v.end(), less)) return;
  if (v.size() >= UINT32_MAX) {  // not from any real round; indices would not fit
    std::stable_sort(v.begin(), v.end(), less);
    return;
  }
  std::vector<uint32_t> order(v.size());  // order[i]: the element that goes to position i
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return less(v[a], v[b]); });
  constexpr uint32_t kPlaced = UINT32_MAX;
  for (size_t start = 0; start < order.size(); ++start) {
    if (order[start] == kPlaced || order[start] == start) continue;
    // The cycle start <- order[start] <- order[order[start]] ... <- start: each element moved once, one held aside.
    auto held = std::move(v[start]);
    size_t to = start;
    for (size_t from = order[to]; from != start; from = order[to]) {
      v[to] = std::move(v[from]);
      order[to] = kPlaced;
      to = from;
    }
    v[to] = std::move(held);
    order[to] = kPlaced;
  }
}

// Adds the sorted range [first, last) to `into`, both sorted by `less` after, stably (`into`'s elements first among
// equals). New events start after most of those held (the feed's backlog: all but the calls that were in flight, and
// work queued behind them; the analysis' window likewise): only the tail from the first new event on is merged.
template <typename Vector, typename It, typename Less>
void merge_range_into(Vector& into, It first, It last, Less less) {
  if (first == last) return;
  const auto offset = std::upper_bound(into.begin(), into.end(), *first, less) - into.begin();
  const size_t mid = into.size();
  into.insert(into.end(), first, last);
  std::inplace_merge(into.begin() + offset, into.begin() + static_cast<std::ptrdiff_t>(mid), into.end(), less);
}

// As merge_range_into, `more` sorted first and moved in (into an empty `into`, no copy: the common case).
template <typename Vector, typename Less>
void merge_into(Vector& into, Vector&& more, Less less) {
  sort_by(more, less);
  if (into.empty()) {
    into = std::move(more);
    return;
  }
  merge_range_into(into, std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()), less);
}

}  // namespace asynccheck
