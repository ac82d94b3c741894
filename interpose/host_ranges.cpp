#include "interpose/host_ranges.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

namespace asynccheck {
namespace {
constexpr auto kGrace = std::chrono::milliseconds(100);
}  // namespace

HostRanges::HostRanges() : current_(new Snapshot) {}

HostRanges::~HostRanges() {
  delete current_.load();
  for (auto& item : retired_) delete item.first;
}

void HostRanges::publish(Snapshot* next) {
  const Snapshot* old = current_.exchange(next, std::memory_order_acq_rel);
  const auto now = std::chrono::steady_clock::now();
  retired_.emplace_back(old, now);
  std::erase_if(retired_, [&](const auto& item) {
    if (now - item.second < kGrace) return false;
    delete item.first;
    return true;
  });
}

void HostRanges::add(uint64_t base, uint64_t bytes, rules::MemoryKind kind) {
  if (base == 0) return;
  std::lock_guard lock(writer_);
  auto* next = new Snapshot(*current_.load(std::memory_order_acquire));
  auto& v = next->ranges;
  auto it = std::lower_bound(v.begin(), v.end(), base, [](const Range& x, uint64_t b) { return x.base < b; });
  if (it != v.end() && it->base == base) {
    *it = {base, base + std::max<uint64_t>(bytes, 1), kind};
  } else {
    v.insert(it, {base, base + std::max<uint64_t>(bytes, 1), kind});
  }
  publish(next);
}

rules::MemoryKind HostRanges::remove(uint64_t base) {
  std::lock_guard lock(writer_);
  const Snapshot* cur = current_.load(std::memory_order_acquire);
  auto it = std::lower_bound(cur->ranges.begin(), cur->ranges.end(), base,
                             [](const Range& x, uint64_t b) { return x.base < b; });
  if (it == cur->ranges.end() || it->base != base) return rules::MemoryKind::Unknown;
  const rules::MemoryKind kind = it->kind;
  auto* next = new Snapshot(*cur);
  next->ranges.erase(next->ranges.begin() + (it - cur->ranges.begin()));
  publish(next);
  return kind;
}

rules::MemoryKind HostRanges::find(uint64_t ptr) const {
  const Snapshot* s = current_.load(std::memory_order_acquire);
  auto it =
      std::upper_bound(s->ranges.begin(), s->ranges.end(), ptr, [](uint64_t p, const Range& x) { return p < x.base; });
  if (it == s->ranges.begin()) return rules::MemoryKind::Unknown;
  --it;
  return ptr < it->end ? it->kind : rules::MemoryKind::Unknown;
}

size_t HostRanges::size() const { return current_.load(std::memory_order_acquire)->ranges.size(); }

}  // namespace asynccheck
