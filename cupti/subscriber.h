// The CUPTI subscription: callbacks enabled per callback id (never whole domains) for the watched APIs, plus the
// resource callbacks that explain host time (context creation, module loading). Mechanism only: what to do with
// a call is the Sink's business (interpose/capture.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "analysis/events.h"
#include "cupti/api_table.h"

namespace asynccheck::cupti {

struct Sink {
  // API entry/exit on the calling thread. `params` is CUPTI's functionParams; `slot` is CUPTI's per-call
  // correlationData, valid from entry to exit; `correlation_id` is CUPTI's.
  void (*on_enter)(const ApiSpec& spec, const void* params, uint64_t* slot, uint32_t correlation_id);
  void (*on_exit)(const ApiSpec& spec, const void* params, uint64_t* slot, uint32_t correlation_id, int32_t result);
  void (*on_mark)(MarkKind kind);
};

// Subscribes and enables callbacks. On failure returns false with a one-line reason naming the CUPTI holder
// when another tool has the subscription.
// The name we subscribe under, which CUPTI tells the next would-be subscriber: a second copy of asynccheck in the
// same process recognizes the first by it.
inline constexpr const char* kSubscriberName = "asynccheck";
inline constexpr const char* kHeldByUs = "CUPTI is already in use by another copy of asynccheck";

bool subscribe(const Sink& sink, std::string& error);

// Disables our callbacks (the subscription stays: CUPTI may still deliver activity buffers).
void stop_callbacks();

uint64_t timestamp();

}  // namespace asynccheck::cupti
