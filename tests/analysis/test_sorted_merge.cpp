// sort_by, merge_into and merge_range_into (analysis/sorted_merge.h): the feed's backlog and the analysis' window
// depend on them being exactly a stable sort, whatever runs the input is made of.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <vector>

#include "analysis/sorted_merge.h"

namespace asynccheck {
namespace {

struct Item {
  int key = 0;
  int seq = 0;  // the position before sorting: stability shows in it
  bool operator==(const Item&) const = default;
};
bool by_key(const Item& a, const Item& b) { return a.key < b.key; }

// `runs` ascending runs one after another (the threads' buffers of a round), keys drawn from `keys` values so that
// ties are common, and `inversions` elements swapped with their neighbour (a nested call, appended first).
std::vector<Item> made(std::mt19937& rng, size_t n, size_t runs, int keys, size_t inversions) {
  std::vector<Item> v(n);
  std::uniform_int_distribution<int> key(0, keys - 1);
  for (Item& x : v) x.key = key(rng);
  const size_t per = std::max<size_t>(1, n / std::max<size_t>(1, runs));
  for (size_t b = 0; b < n; b += per) std::sort(v.begin() + b, v.begin() + std::min(n, b + per), by_key);
  std::uniform_int_distribution<size_t> at(0, n == 0 ? 0 : n - 1);
  for (size_t k = 0; k < inversions && n > 1; ++k) {
    const size_t i = at(rng) % (n - 1);
    std::swap(v[i], v[i + 1]);
  }
  for (size_t i = 0; i < n; ++i) v[i].seq = static_cast<int>(i);
  return v;
}

TEST(SortedMerge, SortByIsAStableSortWhateverTheRuns) {
  std::mt19937 rng(7);
  for (size_t n : {0, 1, 2, 3, 17, 1000, 4096}) {
    for (size_t runs : {1, 2, 8, 31, 32, 33, 100, 5000}) {
      for (int keys : {1, 3, 1'000'000}) {
        for (size_t inversions : {0, 5, 400}) {
          std::vector<Item> v = made(rng, n, runs, keys, inversions), want = v;
          std::stable_sort(want.begin(), want.end(), by_key);
          sort_by(v, by_key);
          ASSERT_EQ(v, want) << n << " items, " << runs << " runs, " << keys << " keys, " << inversions
                             << " inversions";
        }
      }
    }
  }
}

TEST(SortedMerge, MergeIntoKeepsWhatWasHeldFirstAmongEquals) {
  std::mt19937 rng(11);
  for (size_t runs : {1, 8, 64}) {
    std::vector<Item> into = made(rng, 500, 1, 50, 0);
    std::vector<Item> more = made(rng, 300, runs, 50, 3);
    for (Item& x : more) x.seq += 1000;
    std::vector<Item> want = into;
    want.insert(want.end(), more.begin(), more.end());
    std::stable_sort(want.begin(), want.end(), by_key);
    merge_into(into, std::move(more), by_key);
    EXPECT_EQ(into, want) << runs << " runs";
  }
}

// The shapes the feed and the window meet: new events after all held ones, among the last few, before all of them,
// interleaved throughout; either side empty; ties across the two.
TEST(SortedMerge, MergeIntoIsAStableMergeWhereverTheNewEventsFall) {
  std::mt19937 rng(13);
  for (size_t held : {0, 1, 2, 100, 1000}) {
    for (size_t added : {0, 1, 2, 100, 1000}) {
      for (int shift : {-2000, -100, -5, 0, 5, 100, 2000}) {
        for (int keys : {1, 4, 1000}) {
          std::vector<Item> into = made(rng, held, 1, keys, 0);
          std::vector<Item> more = made(rng, added, 1, keys, 0);
          for (Item& x : more) x.key += keys + shift, x.seq += 10'000;
          std::vector<Item> want = into;
          want.insert(want.end(), more.begin(), more.end());
          std::stable_sort(want.begin(), want.end(), by_key);
          merge_into(into, std::move(more), by_key);
          ASSERT_EQ(into, want) << held << " held, " << added << " added, shift " << shift << ", " << keys << " keys";
        }
      }
    }
  }
}

// The feed hands the window its backlog's front as a range (feed.cpp, compact_chunk): copied in, merged as
// merge_into merges, and the backlog it came from left as it was.
TEST(SortedMerge, MergeRangeIntoCopiesASortedRangeIn) {
  std::mt19937 rng(17);
  for (size_t held : {0, 1, 100}) {
    for (size_t taken : {0, 1, 50, 300}) {
      for (int shift :
           {-40, -25, -10, -5, 0, 5, 40}) {  // before, across (ties and interleaving) and after what is held
        std::vector<Item> into = made(rng, held, 1, 20, 0);
        std::vector<Item> backlog = made(rng, 300, 1, 20, 0);
        for (Item& x : backlog) x.key += 20 + shift, x.seq += 10'000;
        const std::vector<Item> source = backlog;
        std::vector<Item> want = into;
        want.insert(want.end(), backlog.begin(), backlog.begin() + static_cast<std::ptrdiff_t>(taken));
        std::stable_sort(want.begin(), want.end(), by_key);
        const std::span<const Item> front(backlog.data(), taken);  // as the feed hands its backlog's front over
        merge_range_into(into, front.begin(), front.end(), by_key);
        ASSERT_EQ(into, want) << held << " held, " << taken << " taken, shift " << shift;
        ASSERT_EQ(backlog, source);
      }
    }
  }
}

}  // namespace
}  // namespace asynccheck
