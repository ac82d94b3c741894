#include "interpose/stacks.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "interpose/lock_within.h"
#include "interpose/python_frames.h"

namespace asynccheck {
namespace {

constexpr int kMaxFrames = 48;

// A stack's identity: its return addresses and its Python frames (the same native code reached from two Python
// lines is two stacks).
struct StackKey {
  std::vector<uint64_t> frames;
  std::vector<PyFrame> python;
  bool operator==(const StackKey&) const = default;
};

struct StackHash {
  size_t operator()(const StackKey& k) const {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t x : k.frames) h = (h ^ x) * 1099511628211ull;
    for (const PyFrame& f : k.python) {
      h = (h ^ std::hash<std::string>{}(f.file)) * 1099511628211ull;
      h = (h ^ static_cast<uint64_t>(f.line)) * 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

struct Interner {
  std::mutex mu;
  std::unordered_map<StackKey, uint32_t, StackHash> ids;
  std::vector<Stack> stacks;
};

Interner& interner() {
  static Interner* i = new Interner;  // never destroyed: used during exit
  return *i;
}

}  // namespace

uint32_t capture_stack(int skip) {
  void* frames[kMaxFrames + 8];
  const int n = unw_backtrace(frames, kMaxFrames + skip);
  StackKey key;
  if (n > skip) key.frames.reserve(static_cast<size_t>(n - skip));
  for (int i = skip; i < n; ++i) key.frames.push_back(reinterpret_cast<uint64_t>(frames[i]));
  // Before the lock: the walk calls into the interpreter (python_frames.h), which must never wait on our lock.
  key.python = python_frames();
  if (key.frames.empty() && key.python.empty()) return 0;
  Interner& in = interner();
  std::lock_guard lock(in.mu);  // only calls that matter get here, never an ordinary launch or copy
  if (auto found = in.ids.find(key); found != in.ids.end()) return found->second;
  // The stack first, then its id, undone if the id cannot be kept: an allocation that throws (caught where CUPTI
  // called us) must not leave an id without its stack, which the next stack would be given too.
  in.stacks.push_back(Stack{key.frames, key.python});
  const auto id = static_cast<uint32_t>(in.stacks.size());
  try {
    in.ids.emplace(std::move(key), id);
  } catch (...) {
    in.stacks.pop_back();
    throw;
  }
  return id;
}

std::vector<Stack> interned_stacks(size_t first) {
  Interner& in = interner();
  if (!lock_within(in.mu)) return {};  // a thread stopped by a signal holds it: no stacks (capture::finish says so)
  std::lock_guard lock(in.mu, std::adopt_lock);
  if (first >= in.stacks.size()) return {};
  return {in.stacks.begin() + static_cast<std::ptrdiff_t>(first), in.stacks.end()};
}

}  // namespace asynccheck
