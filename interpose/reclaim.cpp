#include "interpose/reclaim.h"

#include <pthread.h>

#include <atomic>
#include <mutex>

namespace asynccheck::reclaim {

// One per thread that ever read, on a cache line of its own (readers never write a shared line). Slots are
// never freed, only handed to the next thread when their thread exits: as many as threads ever read at once.
struct alignas(64) Slot {
  std::atomic<uint64_t> epoch{0};  // 0: not reading
  std::atomic<bool> taken{true};
  Slot* next = nullptr;
};

namespace {

std::atomic<uint64_t> g_epoch{1};
std::atomic<Slot*> g_slots{nullptr};

struct ThreadSlot {
  Slot* slot = nullptr;
  ~ThreadSlot() {
    if (slot == nullptr) return;
    slot->epoch.store(0, std::memory_order_seq_cst);
    slot->taken.store(false, std::memory_order_release);
    slot = nullptr;
  }
};
thread_local ThreadSlot t_slot;

// In a forked child only the forking thread runs: a slot another thread held mid-read would otherwise hold back
// every reclamation in the child forever.
void after_fork_in_child() {
  for (Slot* s = g_slots.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    if (s == t_slot.slot) continue;
    s->epoch.store(0, std::memory_order_relaxed);
    s->taken.store(false, std::memory_order_relaxed);
  }
}

Slot* this_thread_slot() {
  if (t_slot.slot != nullptr) return t_slot.slot;
  static std::once_flag fork_handler;
  std::call_once(fork_handler, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
  for (Slot* s = g_slots.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    bool free = false;
    if (!s->taken.load(std::memory_order_relaxed) &&
        s->taken.compare_exchange_strong(free, true, std::memory_order_acquire)) {
      return t_slot.slot = s;
    }
  }
  auto* s = new Slot;
  s->next = g_slots.load(std::memory_order_relaxed);
  while (!g_slots.compare_exchange_weak(s->next, s, std::memory_order_release, std::memory_order_relaxed)) {}
  return t_slot.slot = s;
}

}  // namespace

ReadSection::ReadSection() : slot_(this_thread_slot()) {
  outer_ = slot_->epoch.load(std::memory_order_relaxed) == 0;
  if (outer_) slot_->epoch.store(g_epoch.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
}

ReadSection::~ReadSection() {
  if (outer_) slot_->epoch.store(0, std::memory_order_release);
}

uint64_t retire_epoch() { return g_epoch.fetch_add(1, std::memory_order_seq_cst); }

uint64_t oldest_reader() {
  uint64_t oldest = kNoReader;
  for (Slot* s = g_slots.load(std::memory_order_acquire); s != nullptr; s = s->next) {
    const uint64_t e = s->epoch.load(std::memory_order_seq_cst);
    if (e != 0 && e < oldest) oldest = e;
  }
  return oldest;
}

}  // namespace asynccheck::reclaim
