// The round's buffers (analysis/feed_threads.h: ready_spare, swap_in_spare, return_taken): one spare for every
// program thread, a buffer kept from thread to thread so that none writes to fresh pages, what each thread held
// copied into the round in order.
#include <gtest/gtest.h>

#include <cstdint>

#include "analysis/feed_threads.h"

namespace asynccheck {
namespace {

constexpr size_t kRound = 4096;

ApiCall call(uint64_t correlation_id) {
  ApiCall c;
  c.correlation_id = correlation_id;
  return c;
}

CallVector calls_from(uint64_t first, size_t n) {
  CallVector v;
  v.reserve(kThreadBufferCalls);
  for (size_t i = 0; i < n; ++i) v.push_back(call(first + i));
  return v;
}

// One round over `threads` (their buffers, as the capture's take_from_threads goes through them).
CallVector take_round(std::vector<CallVector*> threads, CallVector& spare) {
  CallVector round;
  for (CallVector* calls : threads) {
    CallVector taken;
    ready_spare(spare, calls->size(), kRound);
    swap_in_spare(*calls, spare, taken);
    return_taken(taken, spare, round, kRound);
  }
  return round;
}

TEST(SpareBuffers, EachThreadsCallsGoIntoTheRoundInOrder) {
  CallVector a = calls_from(100, 3), b = calls_from(200, 2), spare;
  const CallVector round = take_round({&a, &b}, spare);
  ASSERT_EQ(round.size(), 5u);
  EXPECT_EQ(round[0].correlation_id, 100u);
  EXPECT_EQ(round[2].correlation_id, 102u);
  EXPECT_EQ(round[3].correlation_id, 200u);
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(b.empty());
  EXPECT_GE(a.capacity(), kThreadBufferCalls);  // each left with a buffer to append to
  EXPECT_GE(b.capacity(), kThreadBufferCalls);
}

// A buffer the thread used little of is kept all the same (freed, the next thread would write to fresh pages: a 5 ms
// round of an 8-thread flood fills about a quarter of one), and it is the very buffer the next thread gets.
TEST(SpareBuffers, ALittleUsedBufferServesTheNextThread) {
  CallVector a = calls_from(1, 10), b = calls_from(50, 10), spare;
  take_round({&a}, spare);  // a's first buffer becomes the spare
  const ApiCall* a_first = spare.data();
  ASSERT_NE(a_first, nullptr);
  take_round({&b}, spare);
  EXPECT_EQ(b.data(), a_first);  // b appends to the pages a wrote
}

// A thread with nothing keeps its buffer, and the spare waits for the next thread (a thread that exited, listed
// before a busy one, does not take the busy one's buffer for its own).
TEST(SpareBuffers, AThreadWithNothingKeepsItsBuffer) {
  CallVector idle = calls_from(0, 0), busy = calls_from(7, 100), spare;
  const ApiCall* idle_buffer = idle.data();
  take_round({&busy}, spare);
  const ApiCall* spare_buffer = spare.data();
  busy = calls_from(9, 100);
  const CallVector round = take_round({&idle, &busy}, spare);
  EXPECT_EQ(round.size(), 100u);
  EXPECT_EQ(idle.data(), idle_buffer);
  EXPECT_EQ(busy.data(), spare_buffer);
}

// A spare too small for what the next thread holds is replaced before the lock, so that the thread does not grow it
// as it appends; a buffer past two rounds (a burst) is not kept.
TEST(SpareBuffers, TheSpareIsSizedForTheThreadAndBurstsAreNotKept) {
  CallVector spare;
  spare.reserve(kThreadBufferCalls);
  ready_spare(spare, 3 * kRound, kRound);  // more than a round: sized for a round
  EXPECT_GE(spare.capacity(), kRound);
  ready_spare(spare, 10, kRound);  // at least a thread's first buffer
  EXPECT_GE(spare.capacity(), kThreadBufferCalls);

  CallVector burst;
  burst.reserve(3 * kRound);
  burst.push_back(call(1));
  CallVector none, round;
  return_taken(burst, none, round, kRound);
  EXPECT_EQ(none.capacity(), 0u);
  EXPECT_EQ(round.size(), 1u);
}

}  // namespace
}  // namespace asynccheck
