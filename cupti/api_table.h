// The table of CUDA runtime and driver API functions that asynccheck watches through CUPTI callbacks, and the
// decoding of their arguments (CUPTI's `cbdata->functionParams`) into the compact ApiCall event.
//
// Everything here is allocation-free and calls no CUDA or CUPTI function, so it is safe inside a CUPTI callback.
// The header is free of CUDA headers; only api_table.cpp includes <cupti.h> and the generated *_meta.h files.
#pragma once

#include <cstdint>
#include <span>

#include "analysis/events.h"
#include "rules/call.h"

namespace asynccheck::cupti {

using asynccheck::Domain;  // Runtime (CUPTI_CB_DOMAIN_RUNTIME_API) or Driver (CUPTI_CB_DOMAIN_DRIVER_API)

struct ApiSpec {
  Domain domain;
  uint32_t cbid;     // CUPTI_RUNTIME_TRACE_CBID_* / CUPTI_DRIVER_TRACE_CBID_*
  const char* name;  // the name a user writes: "cudaMemcpyAsync" also for cudaMemcpyAsync_ptsz_v7000,
                     // "cuMemcpyHtoD" also for cuMemcpyHtoD_v2 (cuda.h maps the plain name onto _v2)
  rules::ApiKind kind;
  bool async_form;  // the *Async variant
  bool per_thread;  // the _ptds / _ptsz entry point (per-thread default stream)
};

// The watched function with this callback id, or nullptr when it is not watched. O(1), no allocation.
const ApiSpec* find_api(Domain domain, uint32_t cbid);

// Every watched function (runtime entries first, then driver), e.g. for cuptiEnableCallback per cbid.
std::span<const ApiSpec> watched_apis();

// At API entry: fills out.cbid, out.domain, out.call.{api, async_form, per_thread_variant} from the spec, and what
// the arguments say: out.call.direction and out.call.bytes, out.{stream, src_ptr, dst_ptr, function, handle, flags}.
// Leaves memory kinds, stream kinds, timestamps, thread, correlation id and result to the caller.
//
// What goes where:
//   copies     src_ptr/dst_ptr: the addresses as passed; a CUDA array side holds the cudaArray_t/CUarray handle,
//              a symbol side (cudaMemcpyToSymbol/FromSymbol) the symbol's address. bytes: count, width*height (2D),
//              width*height*depth (3D; with a runtime array side the extent's width counts elements, so bytes is
//              then a lower bound), the sum of all sizes (batch copies). direction: from cudaMemcpyKind (runtime),
//              from the name (cuMemcpyHtoD...; arrays count as device), from src/dstMemoryType (cuMemcpy2D/3D),
//              DeviceToDevice for peer copies, Default for cuMemcpy/cuMemcpyAsync and batch copies.
//   memsets    dst_ptr: the target; bytes: count * element size (2D: width*height*element size).
//   launches   function: kernel host function / CUfunction; stream (also from the launch config); graph launches:
//              stream, handle = the executable graph.
//   streams    create: flags (entry), handle = the new stream (exit). destroy/synchronize/query: stream = handle =
//              the stream.
//   events     create: flags (entry), handle = the new event (exit). record: handle = event, stream, flags
//              (WithFlags). synchronize/query: handle = event. stream wait: stream, handle = event, flags.
//   alloc      bytes requested (entry), flags (host alloc / host register / managed attach flags), stream (stream
//              ordered); handle = the allocation (exit). free/unregister: handle = the pointer (array for
//              cudaFreeArray), stream for stream-ordered frees. host register: handle = the pointer, bytes, flags.
//   capture    begin: stream, flags = the capture mode (0 global, 1 thread-local, 2 relaxed), handle = the graph
//              captured into (ToGraph forms). end: stream; handle = the graph made (exit).
//   cache cfg  function (cudaFuncSetCacheConfig/cuFuncSetCacheConfig), flags = the requested cudaFuncCache value.
// `params` may be null (only the spec fields are filled then). Pointers inside the parameters (copy descriptors,
// launch configs, batch arrays) are read after a null check.
void decode_enter(const ApiSpec& spec, const void* params, ApiCall& out);

// At API exit: the out-parameters: the stream created (*pStream), the pointer allocated (*devPtr, *pHost, *dptr,
// pitched allocations also update bytes to pitch*height(*depth)), the event created. Call it only for calls that
// succeeded (an out-parameter of a failed call may hold anything); null out-parameter pointers are skipped.
void decode_exit(const ApiSpec& spec, const void* params, ApiCall& out);

}  // namespace asynccheck::cupti
