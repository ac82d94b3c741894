// Our threads start with every signal blocked: the program's signals must reach its own threads, never ours (a
// program's handler run on our thread would find none of its thread's state, and a signal that stops the process to
// write the report must not stop the threads that report waits for).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <utility>

namespace asynccheck {

// Calls `start` (which starts a thread: std::thread(...).detach(), pthread_create) with every signal blocked, so that
// the thread inherits that mask; the caller's mask is back when this returns. Returns what `start` returns.
template <typename Start>
decltype(auto) with_signals_blocked(Start&& start) {
  struct Restore {
    sigset_t old;
    ~Restore() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
  } restore{};
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &restore.old);
  return std::forward<Start>(start)();
}

}  // namespace asynccheck
