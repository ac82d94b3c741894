#include "common/signals_blocked.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <thread>

namespace asynccheck {
namespace {

bool blocked_here(int sig) {
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, nullptr, &now);
  return sigismember(&now, sig) == 1;
}

// A thread started through it blocks every signal the program may send (the program's handlers never run on it),
// and the starting thread's own mask is as it was, whatever it was.
TEST(SignalsBlocked, TheThreadBlocksEverySignalAndTheCallerKeepsItsMask) {
  sigset_t mine, before;
  sigemptyset(&mine);
  sigaddset(&mine, SIGUSR2);  // the caller's own choice, kept
  pthread_sigmask(SIG_SETMASK, &mine, &before);
  bool term = false, usr1 = false, sigint = false;
  const int got = with_signals_blocked([&] {
    std::thread([&] {
      term = blocked_here(SIGTERM);
      usr1 = blocked_here(SIGUSR1);
      sigint = blocked_here(SIGINT);
    }).join();
    return 7;
  });
  EXPECT_EQ(got, 7);  // what `start` returns (pthread_create's code)
  EXPECT_TRUE(term);
  EXPECT_TRUE(usr1);
  EXPECT_TRUE(sigint);
  EXPECT_TRUE(blocked_here(SIGUSR2));
  EXPECT_FALSE(blocked_here(SIGTERM));
  EXPECT_FALSE(blocked_here(SIGUSR1));
  bool started = false;
  with_signals_blocked([&] { started = true; });  // a start that returns nothing (std::thread(...).detach())
  EXPECT_TRUE(started);
  EXPECT_FALSE(blocked_here(SIGTERM));
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

}  // namespace
}  // namespace asynccheck
