// Taking a lock for the report with a deadline. A fatal signal stops the thread that receives it while our
// handler waits for the report; if that thread held one of the capture's locks, the reporter must give up on
// that part (and say the report is incomplete) rather than wait for a thread that will never release it.
#pragma once

#include <chrono>
#include <thread>

namespace asynccheck {

// How long the report waits for one lock. Locks are held for an append or a lookup (microseconds); waiting
// longer only means the holder is stopped.
inline constexpr std::chrono::milliseconds kReportLockWait{250};

// Locks `mu` (anything with try_lock) within `wait`; false, with `mu` not held, when the deadline passed.
template <typename Mutex>
bool lock_within(Mutex& mu, std::chrono::milliseconds wait = kReportLockWait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!mu.try_lock()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

}  // namespace asynccheck
