// CUPTI activity buffers: CUPTI's buffer callbacks only hand buffers to a queue (Kineto's rule: never parse on
// CUPTI's thread); a worker thread decodes the records into GpuOps and returns the buffers to a pool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/events.h"
#include "cupti/health.h"

namespace asynccheck::cupti {

// Activity kinds we enable: MEMCPY, MEMSET, CONCURRENT_KERNEL (never KIND_KERNEL, which serializes kernels),
// SYNCHRONIZATION, DEVICE (the GPU's name for the report). `device_buffers` caps CUPTI's pool of device buffers
// for kernel, copy and memset timestamps (activity.cpp says why); when CUPTI refuses the cap, `warning` says so
// and recording goes on.
bool enable_activity(size_t buffer_bytes, size_t device_buffers, size_t device_buffer_bytes, std::string& error,
                     std::string& warning);

// Flushes CUPTI's buffers and waits until the worker decoded everything handed off so far. Forced: every buffer,
// with the records of all work finished by now (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); otherwise only the buffers CUPTI
// filled (flag 0), which says nothing of the records still in its other buffers.
// Returns how many buffers CUPTI had handed off by then (buffers_completed).
uint64_t flush_activity(bool forced = true);
// Waits until the worker decoded every buffer CUPTI handed off so far, without flushing: a round that flushes
// nothing takes what CUPTI delivered on its own (analysis/pace.h, ordinary_flush). Returns how many that was.
uint64_t wait_decoded();
// The buffers CUPTI handed off so far (on its own or at a flush).
uint64_t buffers_completed();

// The flushes that failed so far (health.h: CUPTI no longer delivers our records).
void flush_health(Health& h);

// Moves the decoded operations out (after flush_activity). Also returns the device name seen, if any.
OpVector take_ops();
std::string device_name();
uint64_t dropped_records();

// GPU work (kernels, copies, memsets) in `ops` that CUPTI delivered without timestamps (start 0): what it does
// when it has no device buffer left for them (device_buffers); evidence that involves them is incomplete.
uint64_t count_untimed(const OpVector& ops);
// How many such operations came so far.
uint64_t untimed_records();

// How many decoded buffers of this size are kept for CUPTI's next requests: four, or as many as make 4 MiB of smaller
// ones (16 at most), never more than 16 MiB in all, at least one.
size_t spare_slots(size_t buffer_bytes);

// Decodes one buffer of activity records (exposed for tests with fabricated records).
void decode_buffer(const uint8_t* buffer, size_t valid_size, OpVector& out, std::string* device);

}  // namespace asynccheck::cupti
