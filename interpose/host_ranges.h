// Our own registry of memory ranges, fed by the allocation calls we watch, because no CUDA API may be called
// inside a CUPTI callback (cudaPointerGetAttributes would also cost 250-500 ns a copy).
//
// Programs that pin or allocate per batch (data loaders, cudaMallocAsync in a loop) update it as often as they
// copy, with thousands of ranges live, from many threads at once. So:
// - lookups are lock-free: a reader walks an immutable tree (a treap keyed by base address);
// - an update copies only the O(log n) nodes on its path (path copying) and publishes the new root under a mutex;
// - a replaced node is freed once no reader can still hold it (epoch-based reclamation, reclaim.h): no reader ever
//   sees freed memory, however long it is paused, and memory stays proportional to the live ranges as long as
//   lookups run to their end (a paused one keeps what it could read alive; an update never waits for it long).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "rules/call.h"

namespace asynccheck {

class HostRanges {
 public:
  // [base, base + bytes) has `kind`. An existing range at the same base is replaced.
  void add(uint64_t base, uint64_t bytes, rules::MemoryKind kind);
  // Removes the range that starts at `base` (free/unregister take the base pointer). Returns its kind, or
  // Unknown if none starts there.
  rules::MemoryKind remove(uint64_t base);
  // The kind of the range containing `ptr` (interior pointers included), Unknown if none.
  rules::MemoryKind find(uint64_t ptr) const;
  size_t size() const { return live_.load(std::memory_order_relaxed); }
  // Replaced nodes not freed yet (a reader may still hold them): for tests of the bound.
  size_t retired() const { return retired_nodes_.load(std::memory_order_relaxed); }

  HostRanges() = default;
  ~HostRanges();
  HostRanges(const HostRanges&) = delete;
  HostRanges& operator=(const HostRanges&) = delete;

  struct Node;

 private:
  const Node* own(const Node* n);
  bool cut_at(uint64_t base, const Node*& less, const Node*& greater);
  void split(const Node* t, uint64_t key, const Node*& less, const Node*& rest);
  const Node* merge(const Node* a, const Node* b);
  void publish(const Node* root);

  std::atomic<const Node*> root_{nullptr};
  std::atomic<size_t> live_{0};
  mutable std::mutex writer_;          // one update at a time; guards the fields below
  uint64_t write_ = 0;                 // the update in progress: nodes it made are changed in place, others copied
  std::vector<const Node*> replaced_;  // nodes of the published tree that this update replaces
  struct Retired {
    uint64_t epoch;  // freed once every reader started after this epoch
    std::vector<const Node*> nodes;
  };
  std::vector<Retired> retired_;
  std::atomic<size_t> retired_nodes_{0};  // read without the lock: a writer may be waiting while holding it
};

}  // namespace asynccheck
