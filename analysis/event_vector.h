// The vector of the event stream's calls and GPU work (events.h: CallVector, OpVector) and of the analysis' state per
// call: std::vector's interface, in the event memory (event_memory.h), for elements that are trivially copyable.
// What it adds: it grows in place. A flood holds these by the hundred thousand (the feed's backlog, the analysis'
// window) and std::vector grows by copying into a block twice the size, so at each doubling the old block and the
// new one's copy were resident together: 9 MB of a 92k-call backlog beside the rest at the peak of a flood whose
// records came late (docs/performance-log.md). Here a mapped block grows by mremap (event_memory::grow): the pages
// move, nothing is copied.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "analysis/event_memory.h"

namespace asynccheck {

template <typename T>
class EventVector {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "EventVector moves its elements with memcpy and mremap");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  EventVector() noexcept = default;
  explicit EventVector(size_t n) { resize(n); }
  EventVector(size_t n, const T& value) { assign(n, value); }
  template <std::input_iterator It>
  EventVector(It first, It last) {
    assign(first, last);
  }
  EventVector(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  EventVector(const EventVector& other) { assign(other.begin(), other.end()); }
  EventVector(EventVector&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  EventVector& operator=(const EventVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  EventVector& operator=(EventVector&& other) noexcept {
    EventVector(std::move(other)).swap(*this);
    return *this;
  }
  EventVector& operator=(std::initializer_list<T> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  ~EventVector() { event_memory::deallocate(data_, capacity_ * sizeof(T)); }

  void assign(size_t n, const T& value) {
    clear();
    reserve(n);
    std::uninitialized_fill_n(data_, n, value);
    size_ = n;
  }
  template <std::input_iterator It>
  void assign(It first, It last) {
    clear();
    insert(end(), first, last);
  }

  iterator begin() noexcept { return data_; }
  const_iterator begin() const noexcept { return data_; }
  const_iterator cbegin() const noexcept { return data_; }
  iterator end() noexcept { return data_ + size_; }
  const_iterator end() const noexcept { return data_ + size_; }
  const_iterator cend() const noexcept { return data_ + size_; }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return capacity_; }
  size_t max_size() const noexcept { return SIZE_MAX / sizeof(T); }
  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  T& operator[](size_t i) noexcept { return data_[i]; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }
  T& at(size_t i) {
    if (i >= size_) throw std::out_of_range("EventVector::at");
    return data_[i];
  }
  const T& at(size_t i) const { return const_cast<EventVector*>(this)->at(i); }
  T& front() noexcept { return data_[0]; }
  const T& front() const noexcept { return data_[0]; }
  T& back() noexcept { return data_[size_ - 1]; }
  const T& back() const noexcept { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity_) return;
    if (n > max_size()) throw std::length_error("EventVector::reserve");
    data_ = static_cast<T*>(event_memory::grow(data_, capacity_ * sizeof(T), n * sizeof(T), size_ * sizeof(T)));
    capacity_ = n;
  }
  // Gives back what the elements do not use (allocated afresh and copied: only where nothing grows any more).
  void shrink_to_fit() {
    if (size_ == capacity_) return;
    EventVector(begin(), end()).swap(*this);
  }
  void clear() noexcept { size_ = 0; }

  void push_back(const T& value) {
    if (size_ == capacity_) {
      const T copy = value;  // `value` may be an element, and growing may move it
      grow_for(size_ + 1);
      ::new (static_cast<void*>(data_ + size_++)) T(copy);
      return;
    }
    ::new (static_cast<void*>(data_ + size_++)) T(value);
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) {
      T made(std::forward<Args>(args)...);  // the arguments may refer to an element
      grow_for(size_ + 1);
      return *::new (static_cast<void*>(data_ + size_++)) T(made);
    }
    return *::new (static_cast<void*>(data_ + size_++)) T(std::forward<Args>(args)...);
  }
  void pop_back() noexcept { --size_; }

  void resize(size_t n) {
    if (n > size_) {
      reserve_for(n);
      for (size_t i = size_; i < n; ++i) ::new (static_cast<void*>(data_ + i)) T();
    }
    size_ = n;
  }
  void resize(size_t n, const T& value) {
    if (n > size_) {
      const T copy = value;
      reserve_for(n);
      std::uninitialized_fill(data_ + size_, data_ + n, copy);
    }
    size_ = n;
  }

  iterator insert(const_iterator pos, const T& value) {
    const T copy = value;  // `value` may be an element, and growing may move it
    return insert(pos, &copy, &copy + 1);
  }
  // [first, last) must not be this vector's elements.
  template <std::input_iterator It>
  iterator insert(const_iterator pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - data_);
    if constexpr (std::forward_iterator<It>) {
      const size_t n = static_cast<size_t>(std::distance(first, last));
      if (n == 0) return data_ + at;
      reserve_for(size_ + n);
      std::memmove(static_cast<void*>(data_ + at + n), data_ + at, (size_ - at) * sizeof(T));
      std::uninitialized_copy(first, last, data_ + at);
      size_ += n;
    } else {
      EventVector taken;
      for (; first != last; ++first) taken.push_back(*first);
      return insert(pos, taken.begin(), taken.end());
    }
    return data_ + at;
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const size_t from = static_cast<size_t>(first - data_), to = static_cast<size_t>(last - data_);
    if (from != to) {
      std::memmove(static_cast<void*>(data_ + from), data_ + to, (size_ - to) * sizeof(T));
      size_ -= to - from;
    }
    return data_ + from;
  }

  void swap(EventVector& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }
  friend void swap(EventVector& a, EventVector& b) noexcept { a.swap(b); }
  friend bool operator==(const EventVector& a, const EventVector& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  // As std::vector: twice the capacity, or what is needed, so that appending one at a time stays linear.
  void grow_for(size_t n) { reserve(std::max({n, 2 * capacity_, size_t{8}})); }
  void reserve_for(size_t n) {
    if (n > capacity_) grow_for(n);
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// As std::erase_if for std::vector.
template <typename T, typename Pred>
size_t erase_if(EventVector<T>& v, Pred pred) {
  const auto from = std::remove_if(v.begin(), v.end(), pred);
  const size_t n = static_cast<size_t>(v.end() - from);
  v.erase(from, v.end());
  return n;
}

}  // namespace asynccheck
