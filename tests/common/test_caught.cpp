// run_caught (common/caught.h): what CUPTI's callbacks run under.
#include "common/caught.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <new>
#include <stdexcept>

namespace asynccheck {
namespace {

TEST(RunCaught, AThrowGoesNoFurtherAndIsCounted) {
  std::atomic<uint64_t> failures{0};
  bool ran = false;
  run_caught(failures, [&] { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_EQ(failures.load(), 0u);
  EXPECT_NO_THROW(run_caught(failures, [] { throw std::bad_alloc(); }));
  EXPECT_NO_THROW(run_caught(failures, [] { throw std::runtime_error("x"); }));
  EXPECT_EQ(failures.load(), 2u);
}

// A thread cancelled inside it still ends: the cancellation's unwinding is not swallowed (it would abort the process).
std::atomic<uint64_t> g_failures{0};
std::atomic<bool> g_started{false};
void* cancelled_inside(void*) {
  run_caught(g_failures, [] {
    g_started = true;
    for (;;) pause();  // a cancellation point
  });
  return reinterpret_cast<void*>(1);  // not reached: cancelled
}

TEST(RunCaught, AThreadCancelledInsideStillEnds) {
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, nullptr, cancelled_inside, nullptr), 0);
  while (!g_started) usleep(1000);
  ASSERT_EQ(pthread_cancel(t), 0);
  void* result = nullptr;
  ASSERT_EQ(pthread_join(t, &result), 0);
  EXPECT_EQ(result, PTHREAD_CANCELED);
  EXPECT_EQ(g_failures.load(), 0u);
}

}  // namespace
}  // namespace asynccheck
