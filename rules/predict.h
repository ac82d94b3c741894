// The rule engine: from the description of one API call to its documented host behaviour and GPU-side effect.
// Pure and deterministic; knows nothing of CUPTI or of what was measured (analysis/ joins the two).
#pragma once

#include <optional>
#include <string_view>

#include "api_traits.h"
#include "call.h"
#include "catalog.h"

namespace asynccheck::rules {

// What the documentation says the host thread experiences in the call.
enum class HostBehavior : uint8_t {
  Asynchronous,              // returns once the work is enqueued
  NotDocumented,             // no documented rule; only "any call may block" applies
  MayBlock,                  // documented as possibly synchronous
  ReturnsAfterStaging,       // waits for its stream, copies into a pinned staging buffer, then returns
  ReturnsWhenCopyCompletes,  // returns only once the copy (and the work before it in its stream) completed
  FullySynchronous,          // the whole operation happens before the call returns
  WaitsForDevice,            // waits for all work on the device
  WaitsForStream,            // waits for all earlier work in one stream
  WaitsForEvent,             // waits for the work an event captured
};

// What the call does to other GPU work, whether or not it holds the host.
enum class GpuEffect : uint8_t {
  None,
  SerializesWithBlockingStreams,  // legacy default stream: waits for, and is waited on by, every blocking stream
  ImplicitSynchronizationPoint,   // commands of different streams issued around it cannot overlap
};

struct Prediction {
  RuleId host_rule = RuleId::UndocumentedBlock;
  HostBehavior host = HostBehavior::NotDocumented;
  bool host_spins = false;         // a waiting call busy-waits (burns a CPU core) instead of sleeping
  std::optional<RuleId> gpu_rule;  // set when gpu != None
  GpuEffect gpu = GpuEffect::None;

  bool may_hold_host() const { return host != HostBehavior::Asynchronous && host != HostBehavior::NotDocumented; }
  const Rule& host_info() const { return rule(host_rule); }
};

Prediction predict(const CallDescription& call);

std::string_view host_behavior_text(HostBehavior b);  // "asynchronous", "may block", ...
std::string_view gpu_effect_text(GpuEffect e);        // "none", "serializes with all blocking streams", ...

// Memory kind helpers shared with the capture layer.
bool is_host_memory(MemoryKind k);    // pageable or pinned
bool is_device_memory(MemoryKind k);  // device or array

// Commands that enter a stream (copies, memsets, launches, graph launches, event records and waits, stream-ordered
// allocations): on the legacy default stream they serialize with every blocking stream; during stream capture
// they are recorded into the graph instead of executed.
bool enqueues_stream_work(ApiKind api);

// Calls that create, destroy or change state that later calls are described with (streams and their flags,
// events, allocations and their memory kinds, stream capture, cache configuration): compaction keeps them however
// far behind it falls (analysis/feed.h).
bool changes_state(ApiKind api);

// Resolves cudaMemcpyDefault/unknown directions from the memory kinds (unified addressing); keeps an explicit
// direction as given.
CopyDirection resolve_direction(const CallDescription& call);

}  // namespace asynccheck::rules
