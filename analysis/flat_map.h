// A hash map from 64-bit keys (correlation ids) to small values, in one flat array: the correlation index is built
// for every step of the analysis and the records horizon looks up every call and record, where std::unordered_map
// spent an allocation per entry and a cache miss per lookup. Open addressing, linear probing, deletion by shifting
// back (no tombstones), so that a table that sees many inserts and erases stays short.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "analysis/event_memory.h"

namespace asynccheck {

template <typename V>
class FlatMap {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Empties the table, keeping room for `n` entries without growing; n = 0 keeps the room it has (the scratch tables
  // of each step: the next step needs about as much, and reallocating would rehash for nothing).
  void clear(size_t n = 0) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    if (n == 0 && !slots_.empty()) cap = slots_.size();
    if (cap != slots_.size()) {
      allocate(cap);
    } else if (size_ != 0) {
      for (Slot& s : slots_) s.used = false;
    }
    size_ = 0;
  }

  // Empties the table and gives its memory back.
  void release() {
    decltype(slots_)().swap(slots_);
    size_ = 0;
    shift_ = 60;
  }

  V* find(uint64_t key) {
    if (size_ == 0) return nullptr;
    for (size_t i = home(key);; i = next(i)) {
      Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  const V* find(uint64_t key) const { return const_cast<FlatMap*>(this)->find(key); }
  bool contains(uint64_t key) const { return find(key) != nullptr; }

  // The entry of `key`, made with `value` if there was none; second: whether it was made.
  std::pair<V*, bool> try_emplace(uint64_t key, V value = V{}) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = home(key);; i = next(i)) {
      Slot& s = slots_[i];
      if (s.used && s.key == key) return {&s.value, false};
      if (!s.used) {
        s = Slot{key, std::move(value), true};
        ++size_;
        return {&s.value, true};
      }
    }
  }
  V& operator[](uint64_t key) { return *try_emplace(key).first; }

  bool erase(uint64_t key) {
    if (size_ == 0) return false;
    size_t i = home(key);
    for (;; i = next(i)) {
      if (!slots_[i].used) return false;
      if (slots_[i].key == key) break;
    }
    // Shift back the entries after it that would not be found past the hole.
    for (size_t j = next(i);; j = next(j)) {
      Slot& s = slots_[j];
      if (!s.used) break;
      const size_t h = home(s.key);
      const bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
      if (!movable) continue;
      slots_[i] = std::move(s);
      i = j;
    }
    slots_[i].used = false;
    --size_;
    return true;
  }

  // Calls f(key, value) for every entry, in no particular order. f must not change the table.
  template <typename F>
  void for_each(F f) const {
    for (const Slot& s : slots_) {
      if (s.used) f(s.key, s.value);
    }
  }
  template <typename F>
  void for_each(F f) {
    for (Slot& s : slots_) {
      if (s.used) f(s.key, s.value);
    }
  }

 private:
  struct Slot {
    uint64_t key = 0;
    V value{};
    bool used = false;
  };
  // Correlation ids are consecutive: Fibonacci hashing spreads them over the table.
  size_t home(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void grow() {
    decltype(slots_) old = std::move(slots_);
    allocate(old.empty() ? 16 : 2 * old.size());
    size_ = 0;
    for (Slot& s : old) {
      if (s.used) try_emplace(s.key, std::move(s.value));
    }
  }

  void allocate(size_t cap) {  // a power of two
    slots_.assign(cap, Slot{});
    shift_ = 64;
    for (size_t c = cap; c > 1; c /= 2) --shift_;
  }

  std::vector<Slot, EventAllocator<Slot>> slots_;  // a step's tables are as large as its window: event memory
  size_t size_ = 0;
  int shift_ = 60;  // 64 - log2(slots_.size())
};

}  // namespace asynccheck
