// What the rule engine is told about one CUDA API call. Plain data, no CUDA headers: the capture layer fills
// it from CUPTI callback arguments and our own registries, and the unit tests fill it by hand.
#pragma once

#include <cstdint>

namespace asynccheck::rules {

// Which family of API the call belongs to. Runtime and driver variants map to the same kind.
enum class ApiKind : uint8_t {
  Copy,                // cudaMemcpy*, cuMemcpy* (1D/2D/3D, symbol, peer)
  Memset,              // cudaMemset*, cuMemsetD*
  KernelLaunch,        // <<<>>>, cudaLaunchKernel*, cuLaunchKernel*, cooperative variants
  GraphLaunch,         // cudaGraphLaunch, cuGraphLaunch
  StreamCreate,        // cudaStreamCreate*, cuStreamCreate*
  StreamDestroy,       // cudaStreamDestroy, cuStreamDestroy
  DeviceAlloc,         // cudaMalloc, cudaMallocPitch, cudaMalloc3D, cuMemAlloc*
  PinnedAlloc,         // cudaMallocHost, cudaHostAlloc, cuMemAllocHost, cuMemHostAlloc
  HostRegister,        // cudaHostRegister, cuMemHostRegister
  HostUnregister,      // cudaHostUnregister, cuMemHostUnregister
  ManagedAlloc,        // cudaMallocManaged, cuMemAllocManaged
  StreamOrderedAlloc,  // cudaMallocAsync, cudaMallocFromPoolAsync, cuMemAllocAsync
  StreamOrderedFree,   // cudaFreeAsync, cuMemFreeAsync
  Free,                // cudaFree, cuMemFree
  FreeHost,            // cudaFreeHost, cuMemFreeHost
  DeviceSynchronize,   // cudaDeviceSynchronize, cuCtxSynchronize
  StreamSynchronize,   // cudaStreamSynchronize, cuStreamSynchronize
  EventSynchronize,    // cudaEventSynchronize, cuEventSynchronize
  StreamQuery,         // cudaStreamQuery, cudaEventQuery
  StreamWaitEvent,     // cudaStreamWaitEvent, cuStreamWaitEvent
  EventRecord,         // cudaEventRecord
  EventCreate,         // cudaEventCreate*, cuEventCreate (watched for the event's flags)
  CacheConfig,         // cudaDeviceSetCacheConfig, cudaFuncSetCacheConfig
  CaptureBegin,        // cudaStreamBeginCapture(ToGraph), cuStreamBeginCapture(_v2, ToGraph): stream, flags = mode
  CaptureEnd,          // cudaStreamEndCapture, cuStreamEndCapture: stream, handle = the graph made
  ProfilerStart,       // cudaProfilerStart, cuProfilerStart: the capture range option's cudaProfilerApi
  ProfilerStop,        // cudaProfilerStop, cuProfilerStop
  Other,               // anything else that we saw hold the host
};

// Direction of a copy as the program asked for it. Default means cudaMemcpyDefault (inferred from the pointers
// through unified addressing); the capture layer resolves it from the memory kinds when it can.
enum class CopyDirection : uint8_t { Unknown, HostToHost, HostToDevice, DeviceToHost, DeviceToDevice, Default };

enum class MemoryKind : uint8_t {
  Unknown,   // not known to us (no registry entry and no activity record yet)
  Pageable,  // ordinary host memory: malloc, new, stack, mmap
  Pinned,    // page-locked: cudaMallocHost/cudaHostAlloc or registered with cudaHostRegister
  Device,
  Managed,  // cudaMallocManaged
  Array,    // CUDA array
};

enum class StreamKind : uint8_t {
  Unknown,
  LegacyDefault,     // stream 0 / cudaStreamLegacy without per-thread default stream
  PerThreadDefault,  // cudaStreamPerThread, or stream 0 in a _ptds/_ptsz call
  Blocking,          // created without cudaStreamNonBlocking
  NonBlocking,       // created with cudaStreamNonBlocking
};

enum class ModuleLoading : uint8_t { Default, Lazy, Eager };  // CUDA_MODULE_LOADING; Default is lazy since 12.2

// How a host thread waits when it does wait: cudaDeviceScheduleSpin/Yield/BlockingSync, or the event's own
// cudaEventBlockingSync flag. Auto spins while the GPU has fewer active contexts than CPU cores.
enum class WaitMode : uint8_t { Auto, Spin, Yield, BlockingSync };

struct Environment {
  ModuleLoading module_loading = ModuleLoading::Default;
  bool launch_blocking = false;  // CUDA_LAUNCH_BLOCKING=1
  bool operator==(const Environment&) const = default;
};

struct CallDescription {
  ApiKind api = ApiKind::Other;
  bool async_form = false;          // the *Async variant (copies, memsets)
  bool per_thread_variant = false;  // _ptds/_ptsz entry point (built with --default-stream per-thread)
  CopyDirection direction = CopyDirection::Unknown;
  uint64_t bytes = 0;
  MemoryKind src = MemoryKind::Unknown;  // for memsets, the target is `dst`
  MemoryKind dst = MemoryKind::Unknown;
  StreamKind stream = StreamKind::Unknown;
  bool blocking_streams_pending = false;  // some blocking stream other than this one may have work in flight
  bool first_launch = false;              // first launch of this function in the process
  bool stream_ordered_pointer = false;    // Free: the pointer came from cudaMallocAsync
  WaitMode wait_mode = WaitMode::Auto;    // explicit syncs: how the host waits
  // Issued to a stream in capture mode (cudaStreamBeginCapture, or joined to a capture through an event): the
  // command was recorded into a graph, not executed, so no rule about its execution applies. Set by the analysis
  // from the capture calls before it; never recorded.
  bool captured = false;
  // A graph launch whose graph holds a memcpy node that copied to or from pageable host memory, as the driver's
  // activity records of the launch say. Set by the analysis; never recorded.
  bool pageable_copy_node = false;
  Environment env;
  bool operator==(const CallDescription&) const = default;  // tests compare descriptions
};

// The largest pageable host-to-device copy that the Programming Guide lists as asynchronous.
inline constexpr uint64_t kSmallCopyBytes = 64 * 1024;

}  // namespace asynccheck::rules
