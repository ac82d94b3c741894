// When the capture may skip the stacks of legacy-default-stream commands: only while no other blocking stream has
// been used (interpose/blocking_streams.h). Each way one can be used must set it, and nothing else may.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "interpose/blocking_streams.h"

namespace asynccheck {
namespace {

using rules::ApiKind;

constexpr uint32_t kNonBlocking = 0x1;

ApiCall create(uint64_t handle, uint32_t flags, int32_t result = 0) {
  ApiCall c;
  c.call.api = ApiKind::StreamCreate;
  c.handle = handle;
  c.flags = flags;
  c.result = result;
  return c;
}

ApiCall destroy(uint64_t handle) {
  ApiCall c;
  c.call.api = ApiKind::StreamDestroy;
  c.stream = handle;
  c.handle = handle;
  return c;
}

ApiCall launch(uint64_t stream, bool per_thread = false) {
  ApiCall c;
  c.call.api = ApiKind::KernelLaunch;
  c.call.per_thread_variant = per_thread;
  c.stream = stream;
  return c;
}

TEST(BlockingStreams, LegacyStreamAndNonBlockingStreamsAlone) {
  // PyTorch's shape: the default stream is the legacy one (handle 0), its pool streams are non-blocking.
  BlockingStreams s;
  s.observe(launch(0));
  s.observe(launch(0x1));  // cudaStreamLegacy
  s.observe(create(0xa000, kNonBlocking));
  s.observe(create(0xb000, kNonBlocking | 0x4));  // other flag bits do not matter
  for (int i = 0; i < 3; ++i) {
    s.observe(launch(0xa000));
    s.observe(launch(0xb000));
  }
  ApiCall alloc;
  alloc.call.api = ApiKind::DeviceAlloc;
  s.observe(alloc);
  EXPECT_FALSE(s.others_possible());
}

TEST(BlockingStreams, BlockingStreamCountsOnceItIsUsed) {
  // A training process under PyTorch creates one blocking stream and never gives it work.
  BlockingStreams s;
  s.observe(create(0xa000, 0));  // cudaStreamCreate: blocking by default
  s.observe(launch(0));
  EXPECT_FALSE(s.others_possible());
  s.observe(launch(0xa000));
  EXPECT_TRUE(s.others_possible());
}

TEST(BlockingStreams, DestroyingABlockingStreamIsNoUse) {
  BlockingStreams s;
  s.observe(create(0xa000, 0));
  s.observe(destroy(0xa000));
  EXPECT_FALSE(s.others_possible());
}

TEST(BlockingStreams, FailedCreationCreatesNothing) {
  BlockingStreams s;
  s.observe(create(0, 0, /*result=*/2));
  EXPECT_FALSE(s.others_possible());
}

TEST(BlockingStreams, PerThreadDefaultStream) {
  BlockingStreams a;
  a.observe(launch(0x2));  // cudaStreamPerThread
  EXPECT_TRUE(a.others_possible());
  BlockingStreams b;
  b.observe(launch(0, /*per_thread=*/true));  // a _ptsz entry point on stream 0
  EXPECT_TRUE(b.others_possible());
}

TEST(BlockingStreams, StreamNeverSeenCreated) {
  // Created before we attached, or by a path we do not watch: the analysis takes it for a blocking stream.
  BlockingStreams s;
  s.observe(create(0xa000, kNonBlocking));
  s.observe(launch(0xa000));
  EXPECT_FALSE(s.others_possible());
  s.observe(launch(0xc000));
  EXPECT_TRUE(s.others_possible());
}

TEST(BlockingStreams, DestroyedStreamIsForgottenEvenWhenCached) {
  BlockingStreams s;
  s.observe(create(0xa000, kNonBlocking));
  s.observe(launch(0xa000));  // cached as non-blocking on this thread
  s.observe(destroy(0xa000));
  EXPECT_FALSE(s.others_possible());
  // The handle comes back from a path we do not watch: no longer known non-blocking.
  s.observe(launch(0xa000));
  EXPECT_TRUE(s.others_possible());
}

TEST(BlockingStreams, HandleReusedByABlockingStreamWithoutADestroyWeSaw) {
  // cudaDeviceReset destroys every stream without a destroy call of ours; a new blocking stream gets an old handle.
  BlockingStreams s;
  s.observe(create(0xa000, kNonBlocking));
  s.observe(launch(0xa000));  // cached on this thread
  s.observe(create(0xa000, 0));
  s.observe(launch(0xa000));
  EXPECT_TRUE(s.others_possible());
}

TEST(BlockingStreams, CacheBelongsToItsInstance) {
  BlockingStreams first;
  first.observe(create(0xa000, kNonBlocking));
  first.observe(launch(0xa000));
  BlockingStreams second;  // never saw 0xa000 created
  second.observe(launch(0xa000));
  EXPECT_TRUE(second.others_possible());
  EXPECT_FALSE(first.others_possible());
}

TEST(BlockingStreams, StreamCreatedOnOneThreadUsedOnOthers) {
  BlockingStreams s;
  s.observe(create(0xa000, kNonBlocking));
  s.observe(create(0xb000, kNonBlocking));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&s, t] {
      for (int i = 0; i < 10000; ++i) s.observe(launch((i + t) % 2 ? 0xa000 : 0xb000));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(s.others_possible());
}

}  // namespace
}  // namespace asynccheck
