// The per-API traits (rules/api_traits.def) and the one answer to "which stream does this call use".
#include <gtest/gtest.h>

#include "rules/api_traits.h"
#include "rules/predict.h"

namespace asynccheck::rules {
namespace {

constexpr ApiKind kAll[] = {
#define API_TRAITS(kind, stream, enqueues, record, state) ApiKind::kind,
#include "rules/api_traits.def"
#undef API_TRAITS
};

// The columns hang together: work that comes back as records was enqueued, and what is enqueued goes to a stream.
TEST(ApiTraits, ColumnsAreConsistent) {
  for (ApiKind api : kAll) {
    const ApiTraits& t = traits(api);
    if (t.expects_record) {
      EXPECT_TRUE(t.enqueues_work) << static_cast<int>(api);
    }
    if (t.enqueues_work) {
      EXPECT_TRUE(t.takes_stream) << static_cast<int>(api);
    }
  }
  EXPECT_EQ(std::size(kAll), static_cast<size_t>(ApiKind::Other) + 1);  // every kind has its row
}

TEST(ApiTraits, PredictionReadsTheTable) {
  for (ApiKind api : kAll) {
    EXPECT_EQ(enqueues_stream_work(api), traits(api).enqueues_work) << static_cast<int>(api);
    EXPECT_EQ(changes_state(api), traits(api).changes_state) << static_cast<int>(api);
  }
}

CallDescription launch(bool per_thread_variant) {
  CallDescription d;
  d.api = ApiKind::KernelLaunch;
  d.per_thread_variant = per_thread_variant;
  return d;
}

// cudaStreamLegacy is the legacy stream in any entry point, stream 0 the per-thread one in a _ptsz entry point (the
// analysis and the compaction once disagreed on the first: issue 20).
TEST(DefaultStreamNamed, HandlesAndEntryPoints) {
  EXPECT_EQ(default_stream_named(launch(false), 0), StreamKind::LegacyDefault);
  EXPECT_EQ(default_stream_named(launch(true), 0), StreamKind::PerThreadDefault);
  EXPECT_EQ(default_stream_named(launch(true), kStreamLegacyHandle), StreamKind::LegacyDefault);
  EXPECT_EQ(default_stream_named(launch(false), kStreamLegacyHandle), StreamKind::LegacyDefault);
  EXPECT_EQ(default_stream_named(launch(false), kStreamPerThreadHandle), StreamKind::PerThreadDefault);
  EXPECT_EQ(default_stream_named(launch(false), 0x7f00), StreamKind::Unknown);
  CallDescription sync_copy;
  sync_copy.api = ApiKind::Copy;
  EXPECT_EQ(default_stream_named(sync_copy, 0x7f00), StreamKind::LegacyDefault);  // takes no stream argument
  sync_copy.per_thread_variant = true;
  EXPECT_EQ(default_stream_named(sync_copy, 0), StreamKind::PerThreadDefault);
}

}  // namespace
}  // namespace asynccheck::rules
