#include "interpose/host_ranges.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "interpose/reclaim.h"

namespace asynccheck {

// Immutable once published. `written` names the update that made it: only that update may still change it.
struct HostRanges::Node {
  uint64_t base;
  uint64_t last;      // the range's last byte (an end one past it could not hold a range at the top)
  uint64_t priority;  // a treap: a heap on this, a search tree on base
  uint64_t written;
  const Node* left;
  const Node* right;
  rules::MemoryKind kind;
};

namespace {

// How long an update past the bound waits for the lookups in flight, at most.
constexpr auto kWaitForReaders = std::chrono::milliseconds(1);

// The treap's priority: a hash of the address (splitmix64), so that the shape does not depend on the order the
// program allocates in, and the depth stays about 2 ln n.
uint64_t priority_of(uint64_t base) {
  uint64_t z = base + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void free_tree(const HostRanges::Node* n) {
  std::vector<const HostRanges::Node*> todo;
  if (n != nullptr) todo.push_back(n);
  while (!todo.empty()) {
    const HostRanges::Node* x = todo.back();
    todo.pop_back();
    if (x->left != nullptr) todo.push_back(x->left);
    if (x->right != nullptr) todo.push_back(x->right);
    delete x;
  }
}

}  // namespace

HostRanges::~HostRanges() {
  free_tree(root_.load());
  for (const Retired& r : retired_) {
    for (const Node* n : r.nodes) delete n;
  }
}

// The node to change in this update: itself if this update made it, else a copy (the original is replaced).
const HostRanges::Node* HostRanges::own(const Node* n) {
  if (n->written == write_) return n;
  replaced_.push_back(n);
  Node* copy = new Node(*n);
  copy->written = write_;
  return copy;
}

// less: the nodes with base < key; rest: those with base >= key. Copies the nodes on the path.
void HostRanges::split(const Node* t, uint64_t key, const Node*& less, const Node*& rest) {
  if (t == nullptr) {
    less = rest = nullptr;
    return;
  }
  auto* c = const_cast<Node*>(own(t));
  if (c->base < key) {
    split(c->right, key, c->right, rest);
    less = c;
  } else {
    split(c->left, key, less, c->left);
    rest = c;
  }
}

// Every base in a is below every base in b.
const HostRanges::Node* HostRanges::merge(const Node* a, const Node* b) {
  if (a == nullptr) return b;
  if (b == nullptr) return a;
  if (a->priority > b->priority) {
    auto* c = const_cast<Node*>(own(a));
    c->right = merge(c->right, b);
    return c;
  }
  auto* c = const_cast<Node*>(own(b));
  c->left = merge(a, c->left);
  return c;
}

void HostRanges::publish(const Node* root) {
  root_.store(root, std::memory_order_seq_cst);
  if (!replaced_.empty()) {
    retired_nodes_ += replaced_.size();
    retired_.push_back({reclaim::retire_epoch(), std::move(replaced_)});
    replaced_ = {};
  }
  // Free what no reader can hold. Past the bound, wait a little for the readers in flight (each holds a node for
  // one lookup) rather than let memory grow with the number of updates; but never long, and never for this
  // thread's own lookup (a signal handler's allocation inside one): a reader stopped or starved keeps what it can
  // read alive a while longer, it never makes the program's allocations hang.
  const size_t bound = 256 + 2 * live_.load(std::memory_order_relaxed);
  const auto deadline = std::chrono::steady_clock::now() + kWaitForReaders;
  for (;;) {
    const uint64_t oldest = reclaim::oldest_reader();
    auto done = retired_.begin();
    for (; done != retired_.end() && done->epoch < oldest; ++done) {
      for (const Node* n : done->nodes) delete n;
      retired_nodes_ -= done->nodes.size();
    }
    retired_.erase(retired_.begin(), done);
    if (retired_nodes_ <= bound || reclaim::reading() || std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::yield();
  }
}

// Starts an update: splits the tree into the ranges below `base`, the one at `base` (freed here: the copy split made
// of it, its original retired; or none) and those above. Returns whether there was one at `base`.
bool HostRanges::cut_at(uint64_t base, const Node*& less, const Node*& greater) {
  replaced_.clear();  // an update cut short (out of memory) published nothing: what it copied is still live
  ++write_;
  const Node *rest, *same = nullptr;
  greater = nullptr;
  split(root_.load(std::memory_order_relaxed), base, less, rest);
  if (base == UINT64_MAX) {
    same = rest;
  } else {
    split(rest, base + 1, same, greater);
  }
  const bool found = same != nullptr;
  delete same;
  return found;
}

void HostRanges::add(uint64_t base, uint64_t bytes, rules::MemoryKind kind) {
  if (base == 0) return;
  std::lock_guard lock(writer_);
  const Node *less, *greater;
  if (!cut_at(base, less, greater)) live_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t span = std::max<uint64_t>(bytes, 1) - 1;
  const uint64_t last = span > UINT64_MAX - base ? UINT64_MAX : base + span;
  auto* fresh = new Node{base, last, priority_of(base), write_, nullptr, nullptr, kind};
  publish(merge(merge(less, fresh), greater));
}

rules::MemoryKind HostRanges::remove(uint64_t base) {
  std::lock_guard lock(writer_);
  const Node* n = root_.load(std::memory_order_relaxed);  // only this writer frees nodes: no read section needed
  while (n != nullptr && n->base != base) n = base < n->base ? n->left : n->right;
  if (n == nullptr) return rules::MemoryKind::Unknown;
  const rules::MemoryKind kind = n->kind;
  const Node *less, *greater;
  cut_at(base, less, greater);
  live_.fetch_sub(1, std::memory_order_relaxed);
  publish(merge(less, greater));
  return kind;
}

rules::MemoryKind HostRanges::find(uint64_t ptr) const {
  reclaim::ReadSection reading;
  const Node* best = nullptr;
  for (const Node* n = root_.load(std::memory_order_seq_cst); n != nullptr;) {
    if (n->base <= ptr) {
      best = n;
      n = n->right;
    } else {
      n = n->left;
    }
  }
  return best != nullptr && ptr <= best->last ? best->kind : rules::MemoryKind::Unknown;
}

}  // namespace asynccheck
