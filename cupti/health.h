// Whether our CUPTI monitoring still stood at the end of the run, and if not why: the decision from what was
// observed, kept apart from the CUPTI calls that observe it (subscriber.cpp, activity.cpp) so that it is tested
// on fabricated states without a GPU.
//
// What can stop monitoring in the middle of a run, all outside our control:
// - CUPTI finalizes itself after a fatal error (CUPTI_CBID_STATE_FATAL_ERROR, which we subscribe to and record as
//   it comes, copying its message only: no CUDA or CUPTI call in the callback);
// - another CUPTI client in the process calls cuptiFinalize() (Kineto does when it tears CUPTI down): every
//   subscription is gone; our handle then answers CUPTI errors, or callbacks read as disabled;
// - cuptiEnableCallback/cuptiEnableDomain/cuptiUnsubscribe on our subscriber by code that got hold of its handle;
// - cuptiActivityFlushAll failing (CUPTI_ERROR_INVALID_OPERATION once the activity callbacks are gone): the GPU
//   work's records no longer reach us.
// Not seen: another client's cuptiActivityDisable of a kind we enabled, or its cuptiActivityRegisterCallbacks
// taking the buffers; CUPTI has no call to ask either (docs/robustness.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace asynccheck::cupti {

struct Health {
  std::string fatal_error;         // CUPTI's fatal-error notification ("" if none came)
  std::string subscription_error;  // cuptiGetCallbackState failed for our subscriber (CUPTI's words), at the end
  size_t callbacks_checked = 0;    // watched API callbacks whose state was read at the end
  size_t callbacks_disabled = 0;   // of those, found disabled (we never disable them before the end)
  std::string first_disabled;      // the API of the first one found disabled
  std::string flush_error;         // the first cuptiActivityFlushAll that failed (CUPTI's words)
  uint64_t flush_failures = 0;     // how many failed
};

// "" when monitoring still stood, else why it stopped, for RunInfo::monitoring's "stopped: WHY" (analysis/
// monitoring.h): the first cause in the order above, which explains the others it brings (a finalize both
// invalidates the subscription and fails the flush).
std::string stopped_reason(const Health& h);

}  // namespace asynccheck::cupti
