// The CUPTI subscription: callbacks enabled per callback id (never whole domains) for the watched APIs, plus the
// resource callbacks that explain host time (context creation, module loading). Mechanism only: what to do with
// a call is the Sink's business (interpose/capture.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "analysis/events.h"
#include "cupti/api_table.h"
#include "cupti/health.h"

namespace asynccheck::cupti {

struct Sink {
  // API entry/exit on the calling thread. `params` is CUPTI's functionParams; `slot` is CUPTI's per-call
  // correlationData, valid from entry to exit; `correlation_id` is CUPTI's.
  void (*on_enter)(const ApiSpec& spec, const void* params, uint64_t* slot, uint32_t correlation_id);
  void (*on_exit)(const ApiSpec& spec, const void* params, uint64_t* slot, uint32_t correlation_id, int32_t result);
  void (*on_mark)(MarkKind kind);
  // The program's NVTX calls (CUPTI_CB_DOMAIN_NVTX), once enable_nvtx() succeeded: `cbid` a
  // CUpti_nvtx_api_trace_cbid, `params` and `result` the CUpti_NvtxData's functionParams and functionReturnValue.
  void (*on_nvtx)(uint32_t cbid, const void* params, const void* result) = nullptr;
};

// Subscribes and enables callbacks. On failure returns false with a one-line reason naming the CUPTI holder
// when another tool has the subscription.
// The name we subscribe under, which CUPTI tells the next would-be subscriber: a second copy of asynccheck in the
// same process recognizes the first by it.
inline constexpr const char* kSubscriberName = "asynccheck";
inline constexpr const char* kHeldByUs = "CUPTI is already in use by another copy of asynccheck";

bool subscribe(const Sink& sink, std::string& error);

// NVTX ranges (interpose/nvtx_ranges.h), after subscribe(): enables the NVTX push/pop callbacks and makes the CUPTI
// library this process loaded NVTX's tool, by setting NVTX_INJECTION64_PATH to its path unless it is set already.
// NVTX reads that variable at the program's first NVTX call, so this must run before it (LD_PRELOAD's constructor
// does; under CUDA_INJECTION64_PATH the program may have made NVTX calls before CUDA started, and then ranges stay
// off without a way to tell). False, with the reason in `why`, when ranges are off: NVTX_INJECTION64_PATH names
// another tool (Nsight, another profiler), or this CUPTI cannot be NVTX's tool.
bool enable_nvtx(std::string& why);

// Whether our subscription still stands (health.h): CUPTI's fatal error if one came, and the state of every watched
// API's callback. Before stop_callbacks(), from outside any callback (it asks CUPTI).
void check_subscription(Health& h);

// Disables our callbacks (the subscription stays: CUPTI may still deliver activity buffers).
void stop_callbacks();

uint64_t timestamp();

// Callbacks whose handling threw (our allocations out of memory on the program's thread), caught at CUPTI's dispatch:
// what they were about is missing from the report. `calls`: the runtime and driver API's (a call each, at most);
// `others`: NVTX's and the resource callbacks' (a range, a module load or a context creation).
struct FailedCallbacks {
  uint64_t calls = 0, others = 0;
  bool any() const { return calls != 0 || others != 0; }
};
FailedCallbacks failed_callbacks();

}  // namespace asynccheck::cupti
