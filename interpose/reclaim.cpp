#include "interpose/reclaim.h"

#include <pthread.h>

#include <atomic>

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

// A plain thread-local pointer (no destructor: registering one takes the loader's lock, inside a CUPTI callback),
// released by a pthread key's destructor when the thread exits; a read after that takes a slot again.
thread_local Slot* t_slot = nullptr;
pthread_key_t g_slot_key;

void release_slot(void* p) {
  auto* slot = static_cast<Slot*>(p);
  slot->epoch.store(0, std::memory_order_seq_cst);
  slot->taken.store(false, std::memory_order_release);
  t_slot = nullptr;
}

// In a forked child only the forking thread runs: a slot another thread held mid-read would otherwise hold back
// every reclamation in the child forever.
void after_fork_in_child() {
  for (Slot* s = g_slots.load(std::memory_order_relaxed); s != nullptr; s = s->next) {
    if (s == t_slot) continue;
    s->epoch.store(0, std::memory_order_relaxed);
    s->taken.store(false, std::memory_order_relaxed);
  }
}

Slot* take_slot() {
  // seq_cst like the epochs: a writer's scan (oldest_reader) must see a slot taken before its owner announces in it.
  for (Slot* s = g_slots.load(std::memory_order_seq_cst); s != nullptr; s = s->next) {
    bool free = false;
    if (!s->taken.load(std::memory_order_relaxed) && s->taken.compare_exchange_strong(free, true)) return s;
  }
  auto* s = new Slot;
  s->next = g_slots.load(std::memory_order_seq_cst);
  while (!g_slots.compare_exchange_weak(s->next, s)) {}
  return s;
}

Slot* this_thread_slot() {
  if (t_slot != nullptr) return t_slot;
  static const bool key_made = [] {
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
    return pthread_key_create(&g_slot_key, release_slot) == 0;
  }();
  t_slot = take_slot();
  if (key_made) pthread_setspecific(g_slot_key, t_slot);
  return t_slot;
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

bool reading() { return t_slot != nullptr && t_slot->epoch.load(std::memory_order_relaxed) != 0; }

uint64_t oldest_reader() {
  uint64_t oldest = kNoReader;
  for (Slot* s = g_slots.load(std::memory_order_seq_cst); s != nullptr; s = s->next) {
    const uint64_t e = s->epoch.load(std::memory_order_seq_cst);
    if (e != 0 && e < oldest) oldest = e;
  }
  return oldest;
}

}  // namespace asynccheck::reclaim
