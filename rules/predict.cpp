#include "predict.h"

#include "api_traits.h"

namespace asynccheck::rules {
namespace {

Prediction host_only(RuleId id, HostBehavior b) {
  Prediction p;
  p.host_rule = id;
  p.host = b;
  return p;
}

// Synchronous copy and memset forms take no stream: they are issued to the default stream, which is the legacy
// stream unless the call is a per-thread-default-stream entry point.
StreamKind effective_stream(const CallDescription& c) {
  if (uses_implicit_default_stream(c) && c.stream == StreamKind::Unknown) {
    return c.per_thread_variant ? StreamKind::PerThreadDefault : StreamKind::LegacyDefault;
  }
  return c.stream;
}

Prediction predict_copy(const CallDescription& c) {
  if (c.src == MemoryKind::Managed || c.dst == MemoryKind::Managed) {
    return host_only(RuleId::CopyManaged, HostBehavior::MayBlock);
  }
  switch (resolve_direction(c)) {
    case CopyDirection::HostToHost: return host_only(RuleId::CopyHostToHost, HostBehavior::FullySynchronous);
    case CopyDirection::DeviceToDevice: {
      Prediction p = host_only(RuleId::CopyDeviceToDevice, HostBehavior::Asynchronous);
      if (!c.async_form) {  // a copy between two addresses of the same device, issued between streams' commands
        p.gpu_rule = RuleId::CopyDeviceToDevice;
        p.gpu = GpuEffect::ImplicitSynchronizationPoint;
      }
      return p;
    }
    case CopyDirection::HostToDevice:
      if (c.bytes <= kSmallCopyBytes) {
        return host_only(RuleId::CopySmallH2D, HostBehavior::Asynchronous);
      }
      if (c.src == MemoryKind::Pageable) {
        return c.async_form ? host_only(RuleId::CopyAsyncPageableH2D, HostBehavior::ReturnsAfterStaging)
                            : host_only(RuleId::CopySyncPageableH2D, HostBehavior::ReturnsAfterStaging);
      }
      if (c.src == MemoryKind::Pinned) {
        return c.async_form ? host_only(RuleId::CopyAsyncPinned, HostBehavior::Asynchronous)
                            : host_only(RuleId::CopySyncPinnedH2D, HostBehavior::FullySynchronous);
      }
      return host_only(RuleId::CopyUnknownMemory, HostBehavior::MayBlock);
    case CopyDirection::DeviceToHost:
      if (!c.async_form) return host_only(RuleId::CopySyncD2H, HostBehavior::ReturnsWhenCopyCompletes);
      if (c.dst == MemoryKind::Pageable) {
        return host_only(RuleId::CopyAsyncPageableD2H, HostBehavior::ReturnsWhenCopyCompletes);
      }
      if (c.dst == MemoryKind::Pinned) return host_only(RuleId::CopyAsyncPinned, HostBehavior::Asynchronous);
      return host_only(RuleId::CopyUnknownMemory, HostBehavior::MayBlock);
    case CopyDirection::Unknown:
    case CopyDirection::Default: break;
  }
  return host_only(RuleId::CopyUnknownMemory, HostBehavior::MayBlock);
}

Prediction predict_memset(const CallDescription& c) {
  if (c.async_form) return host_only(RuleId::MemsetAsync, HostBehavior::Asynchronous);
  if (c.dst == MemoryKind::Pinned) return host_only(RuleId::MemsetPinnedHost, HostBehavior::FullySynchronous);
  if (c.dst == MemoryKind::Managed) return host_only(RuleId::MemsetManaged, HostBehavior::FullySynchronous);
  Prediction p = host_only(RuleId::MemsetDevice, HostBehavior::Asynchronous);
  p.gpu_rule = RuleId::MemsetDevice;  // "a device memory set" is an implicit synchronization point
  p.gpu = GpuEffect::ImplicitSynchronizationPoint;
  return p;
}

Prediction predict_launch(const CallDescription& c) {
  if (c.env.launch_blocking) return host_only(RuleId::LaunchBlockingEnv, HostBehavior::FullySynchronous);
  if (c.first_launch && c.env.module_loading != ModuleLoading::Eager) {
    return host_only(RuleId::FirstLaunchLazyLoading, HostBehavior::MayBlock);
  }
  return host_only(RuleId::LaunchAsync, HostBehavior::Asynchronous);
}

Prediction predict_wait(RuleId id, HostBehavior b, WaitMode mode) {
  Prediction p = host_only(id, b);
  p.host_spins = mode != WaitMode::BlockingSync;
  return p;
}

Prediction predict_host(const CallDescription& c) {
  switch (c.api) {
    case ApiKind::Copy: return predict_copy(c);
    case ApiKind::Memset: return predict_memset(c);
    case ApiKind::KernelLaunch: return predict_launch(c);
    case ApiKind::GraphLaunch:
      return c.pageable_copy_node ? host_only(RuleId::GraphPageableCopyNode, HostBehavior::ReturnsWhenCopyCompletes)
                                  : host_only(RuleId::GraphLaunch, HostBehavior::Asynchronous);
    case ApiKind::StreamCreate: return host_only(RuleId::StreamCreate, HostBehavior::Asynchronous);
    case ApiKind::StreamDestroy: return host_only(RuleId::StreamDestroy, HostBehavior::Asynchronous);
    case ApiKind::DeviceAlloc:
    case ApiKind::ManagedAlloc: {
      Prediction p = host_only(RuleId::DeviceAlloc, HostBehavior::MayBlock);
      p.gpu_rule = RuleId::DeviceAlloc;
      p.gpu = GpuEffect::ImplicitSynchronizationPoint;
      return p;
    }
    case ApiKind::PinnedAlloc:
    case ApiKind::HostRegister: {
      Prediction p = host_only(RuleId::PinnedAlloc, HostBehavior::MayBlock);
      p.gpu_rule = RuleId::PinnedAlloc;
      p.gpu = GpuEffect::ImplicitSynchronizationPoint;
      return p;
    }
    case ApiKind::Free:
      return c.stream_ordered_pointer ? host_only(RuleId::FreeStreamOrdered, HostBehavior::Asynchronous)
                                      : host_only(RuleId::FreeWaitsForDevice, HostBehavior::WaitsForDevice);
    case ApiKind::FreeHost:
    case ApiKind::HostUnregister: return host_only(RuleId::FreeHost, HostBehavior::MayBlock);
    case ApiKind::StreamOrderedAlloc:
    case ApiKind::StreamOrderedFree: return host_only(RuleId::StreamOrderedAlloc, HostBehavior::Asynchronous);
    case ApiKind::DeviceSynchronize:
      return predict_wait(RuleId::DeviceSynchronize, HostBehavior::WaitsForDevice, c.wait_mode);
    case ApiKind::StreamSynchronize:
      return predict_wait(RuleId::StreamSynchronize, HostBehavior::WaitsForStream, c.wait_mode);
    case ApiKind::EventSynchronize:
      return c.wait_mode == WaitMode::BlockingSync
                 ? predict_wait(RuleId::EventSynchronizeBlocking, HostBehavior::WaitsForEvent, c.wait_mode)
                 : predict_wait(RuleId::EventSynchronizeSpin, HostBehavior::WaitsForEvent, c.wait_mode);
    case ApiKind::StreamQuery:
    case ApiKind::StreamWaitEvent:
    case ApiKind::EventRecord: return host_only(RuleId::AsyncQuery, HostBehavior::Asynchronous);
    case ApiKind::CacheConfig: {
      Prediction p = host_only(RuleId::CacheConfig, HostBehavior::MayBlock);
      p.gpu_rule = RuleId::CacheConfig;
      p.gpu = GpuEffect::ImplicitSynchronizationPoint;
      return p;
    }
    case ApiKind::EventCreate:
    case ApiKind::CaptureBegin:
    case ApiKind::CaptureEnd:
    case ApiKind::ProfilerStart:
    case ApiKind::ProfilerStop:
    case ApiKind::Other: break;
  }
  return host_only(RuleId::UndocumentedBlock, HostBehavior::NotDocumented);
}

}  // namespace

bool enqueues_stream_work(ApiKind api) { return traits(api).enqueues_work; }

bool changes_state(ApiKind api) { return traits(api).changes_state; }

bool is_host_memory(MemoryKind k) { return k == MemoryKind::Pageable || k == MemoryKind::Pinned; }
bool is_device_memory(MemoryKind k) { return k == MemoryKind::Device || k == MemoryKind::Array; }

CopyDirection resolve_direction(const CallDescription& c) {
  if (c.direction != CopyDirection::Default && c.direction != CopyDirection::Unknown) return c.direction;
  const bool src_host = is_host_memory(c.src), dst_host = is_host_memory(c.dst);
  const bool src_dev = is_device_memory(c.src), dst_dev = is_device_memory(c.dst);
  if (src_host && dst_host) return CopyDirection::HostToHost;
  if (src_host && dst_dev) return CopyDirection::HostToDevice;
  if (src_dev && dst_host) return CopyDirection::DeviceToHost;
  if (src_dev && dst_dev) return CopyDirection::DeviceToDevice;
  return c.direction;
}

Prediction predict(const CallDescription& call) {
  Prediction p = predict_host(call);
  // The legacy stream rule is about the GPU side, and it outranks the per-kind implicit-sync note: the command
  // waits for every blocking stream and every blocking stream waits for it. A captured command is not executed: it
  // serializes nothing (and the legacy stream cannot be captured anyway).
  if (!call.captured && enqueues_stream_work(call.api) && effective_stream(call) == StreamKind::LegacyDefault &&
      call.blocking_streams_pending) {
    p.gpu_rule = RuleId::LegacyStreamSerialization;
    p.gpu = GpuEffect::SerializesWithBlockingStreams;
  }
  return p;
}

std::string_view host_behavior_text(HostBehavior b) {
  switch (b) {
    case HostBehavior::Asynchronous: return "asynchronous";
    case HostBehavior::NotDocumented: return "not documented to block";
    case HostBehavior::MayBlock: return "may block";
    case HostBehavior::ReturnsAfterStaging: return "returns after staging";
    case HostBehavior::ReturnsWhenCopyCompletes: return "returns only when the copy completes";
    case HostBehavior::FullySynchronous: return "fully synchronous";
    case HostBehavior::WaitsForDevice: return "waits for the device";
    case HostBehavior::WaitsForStream: return "waits for the stream";
    case HostBehavior::WaitsForEvent: return "waits for the event";
  }
  return "unknown";
}

std::string_view gpu_effect_text(GpuEffect e) {
  switch (e) {
    case GpuEffect::None: return "none";
    case GpuEffect::SerializesWithBlockingStreams: return "serializes with all blocking streams";
    case GpuEffect::ImplicitSynchronizationPoint: return "implicit synchronization point between streams";
  }
  return "unknown";
}

}  // namespace asynccheck::rules
