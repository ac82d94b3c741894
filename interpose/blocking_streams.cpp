#include "interpose/blocking_streams.h"

namespace asynccheck {
namespace {

std::atomic<uint64_t> g_instances{0};

// The last stream this thread found among the non-blocking ones, for the instance and generation it was found in.
struct Cache {
  uint64_t owner = 0;  // BlockingStreams::id_ (0: none)
  uint64_t generation = 0;
  uint64_t stream = 0;
};
thread_local Cache t_cache;

}  // namespace

BlockingStreams::BlockingStreams() : id_(g_instances.fetch_add(1, std::memory_order_relaxed) + 1) {}

void BlockingStreams::observe(const ApiCall& c) {
  if (others_possible()) return;  // nothing left to learn
  const rules::CallDescription& d = c.call;
  switch (d.api) {
    case rules::ApiKind::StreamCreate: {
      // A blocking stream matters once it is given work (a call on it, below): creating one is not enough. Its
      // handle may be one a stream destroyed without a destroy call of ours had (a context reset): forget that.
      if (c.result != 0 || c.handle == 0) return;
      std::lock_guard lock(mu_);
      if ((c.flags & kStreamNonBlockingFlag) != 0) {
        non_blocking_.insert(c.handle);
      } else if (non_blocking_.erase(c.handle) > 0) {
        generation_.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    }
    case rules::ApiKind::StreamDestroy: {
      std::lock_guard lock(mu_);
      non_blocking_.erase(c.handle);
      generation_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    default: break;
  }
  if (!rules::traits(d.api).takes_stream && !rules::uses_implicit_default_stream(d)) return;
  switch (rules::default_stream_named(d, c.stream)) {
    case rules::StreamKind::PerThreadDefault: return set();  // it synchronizes with the legacy stream
    case rules::StreamKind::LegacyDefault: return;
    default: break;
  }
  const uint64_t generation = generation_.load(std::memory_order_relaxed);
  if (t_cache.owner == id_ && t_cache.generation == generation && t_cache.stream == c.stream) return;
  std::lock_guard lock(mu_);
  if (non_blocking_.count(c.stream) == 0) return set();  // blocking, or never seen created: serialization possible
  t_cache = {id_, generation, c.stream};
}

}  // namespace asynccheck
