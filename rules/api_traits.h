// Per-API traits (api_traits.def) and the one answer to "which stream does this call use": read by the rule engine,
// the analysis, the capture (which stacks to walk, which calls to shed) and the records horizon.
#pragma once

#include <cstdint>

#include "rules/call.h"

namespace asynccheck::rules {

// Stream handles with a meaning of their own (the runtime and the driver API define the same values).
inline constexpr uint64_t kStreamLegacyHandle = 0x1;     // cudaStreamLegacy == CU_STREAM_LEGACY
inline constexpr uint64_t kStreamPerThreadHandle = 0x2;  // cudaStreamPerThread == CU_STREAM_PER_THREAD

struct ApiTraits {
  bool takes_stream = false;
  bool enqueues_work = false;
  bool expects_record = false;
  bool changes_state = false;
};

const ApiTraits& traits(ApiKind api);

// Synchronous copy and memset forms take no stream argument: they are issued to the default stream.
bool uses_implicit_default_stream(const CallDescription& call);

// The default stream a call's stream argument names, or Unknown for a stream handle (whose kind its creation
// says). Synchronous copies and memsets take no stream: they use the default stream. Stream 0 is the legacy
// default stream, or the calling thread's per-thread default stream in a _ptds/_ptsz entry point (a program built
// with --default-stream per-thread); cudaStreamLegacy and cudaStreamPerThread name theirs in any entry point.
StreamKind default_stream_named(const CallDescription& call, uint64_t stream_handle);

}  // namespace asynccheck::rules
