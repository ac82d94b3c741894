#include "rules/api_traits.h"

namespace asynccheck::rules {

const ApiTraits& traits(ApiKind api) {
  switch (api) {
#define API_TRAITS(kind, stream, enqueues, record, state)          \
  case ApiKind::kind: {                                            \
    static constexpr ApiTraits t{stream, enqueues, record, state}; \
    return t;                                                      \
  }
#include "rules/api_traits.def"
#undef API_TRAITS
  }
  static constexpr ApiTraits none{};
  return none;
}

bool uses_implicit_default_stream(const CallDescription& c) {
  return (c.api == ApiKind::Copy || c.api == ApiKind::Memset) && !c.async_form;
}

StreamKind default_stream_named(const CallDescription& call, uint64_t stream_handle) {
  if (uses_implicit_default_stream(call) || stream_handle == 0) {
    return call.per_thread_variant ? StreamKind::PerThreadDefault : StreamKind::LegacyDefault;
  }
  if (stream_handle == kStreamLegacyHandle) return StreamKind::LegacyDefault;
  if (stream_handle == kStreamPerThreadHandle) return StreamKind::PerThreadDefault;
  return StreamKind::Unknown;
}

}  // namespace asynccheck::rules
