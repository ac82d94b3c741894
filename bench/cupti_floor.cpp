// The CUPTI floor: LD_PRELOAD=libcupti_floor.so ./app subscribes to CUPTI the way asynccheck does and does nothing
// else. Same subscription (cuptiSubscribe_v2), the same callback ids (cupti/api_table.h's watched_apis(), enabled
// one by one, plus the same three resource callbacks), the same activity kinds (MEMCPY, MEMSET, CONCURRENT_KERNEL,
// SYNCHRONIZATION, DEVICE; synchronization records of explicit synchronization calls only) and the same activity
// buffer size (asynccheck's default: options.def's activity_buffer_kb), with an empty callback and a buffer-completed
// handler that frees the buffer. What this costs is what any CUPTI-based tool watching the same calls pays;
// asynccheck's added cost is quoted as a multiple of it (docs/performance.md). Buffers are flushed at exit, as
// asynccheck does.
//
// Environment: CUPTI_FLOOR_BUFFER_KB (default: asynccheck's), CUPTI_FLOOR_DEVICE_BUFFER_KB (default 0: CUPTI's size),
// CUPTI_FLOOR_VERBOSE=1 (one line at start and at exit), CUPTI_FLOOR_FLUSH_MS=N with
// CUPTI_FLOOR_FLUSH=forced|default: a thread that flushes every N ms (what CUPTI does when a tool collects its
// records during the run, as asynccheck's compaction does; docs/robustness.md), or CUPTI_FLOOR_FLUSH=period: CUPTI's
// own worker thread flushes every N ms (cuptiActivityFlushPeriod).
// Errors are printed as one "cupti_floor: ERROR ..." line on stderr; the program then runs unwatched.
#include <cupti.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cupti/api_table.h"
#include "options/options.h"

namespace {

using asynccheck::Domain;

size_t g_buffer_bytes = 0;  // asynccheck's default unless CUPTI_FLOOR_BUFFER_KB says (cupti_floor_start)
bool g_verbose = false;
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<uint64_t> g_buffers{0};
std::atomic<uint64_t> g_bytes{0};
std::atomic<uint64_t> g_dropped{0};

void say(const std::string& line) {
  const std::string out = "cupti_floor: " + line + "\n";
  ssize_t ignored = write(STDERR_FILENO, out.data(), out.size());
  (void)ignored;
}

std::string result_text(CUptiResult r) {
  const char* msg = nullptr;
  if (cuptiGetResultString(r, &msg) != CUPTI_SUCCESS || msg == nullptr) return "CUPTI error " + std::to_string(r);
  return msg;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, g_buffer_bytes));
  *buffer = b;
  *size = b ? g_buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  size_t dropped = 0;  // asynccheck asks too, once a buffer
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
  g_buffers.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(valid, std::memory_order_relaxed);
  g_dropped.fetch_add(dropped, std::memory_order_relaxed);
  std::free(buffer);
}

void at_exit() {
  for (const auto& spec : asynccheck::cupti::watched_apis()) {
    cuptiEnableCallback(0, g_subscriber,
                        spec.domain == Domain::Runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                        spec.cbid);
  }
  const uint64_t before_flush = g_buffers.load();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (g_verbose) {
    say("exit: " + std::to_string(g_buffers.load()) + " buffers completed (" + std::to_string(before_flush) +
        " before the exit's flush), " + std::to_string(g_bytes.load()) + " bytes of records, " +
        std::to_string(g_dropped.load()) + " dropped");
  }
}

bool start(std::string& error) {
  CUpti_SubscriberParams params;
  std::memset(&params, 0, sizeof params);
  char holder[256] = {};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "cupti_floor";
  params.oldSubscriberName = holder;
  params.oldSubscriberSize = sizeof holder;
  CUptiResult r = cuptiSubscribe_v2(&g_subscriber, on_callback, nullptr, &params);
  if (r != CUPTI_SUCCESS) {
    error = "cannot subscribe to CUPTI: " + result_text(r);
    if (holder[0]) error += std::string(" (held by ") + holder + ")";
    return false;
  }
  size_t callbacks = 0;
  for (const auto& spec : asynccheck::cupti::watched_apis()) {
    r = cuptiEnableCallback(1, g_subscriber,
                            spec.domain == Domain::Runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
                            spec.cbid);
    if (r != CUPTI_SUCCESS) {
      error = std::string("cannot enable the CUPTI callback for ") + spec.name + ": " + result_text(r);
      return false;
    }
    ++callbacks;
  }
  for (CUpti_CallbackId id : {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_MODULE_LOADED,
                              CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING}) {
    cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE, id);
  }
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
    error = "cuptiActivityRegisterCallbacks failed";
    return false;
  }
  cuptiActivityEnableAllSyncRecords(0);
  // CUPTI_FLOOR_KINDS (comma-separated: memcpy, memset, kernel, sync; "none"; default all) measures what each
  // activity kind costs on its own (docs/performance-log.md: "What each CUPTI activity kind costs").
  const char* kinds = std::getenv("CUPTI_FLOOR_KINDS");
  auto wanted = [&](const char* name) {
    if (kinds == nullptr) return true;
    const std::string list = std::string(",") + kinds + ",";
    return list.find(std::string(",") + name + ",") != std::string::npos;
  };
  std::vector<CUpti_ActivityKind> enabled;
  if (wanted("memcpy")) enabled.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
  if (wanted("memset")) enabled.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (wanted("kernel")) enabled.push_back(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (wanted("sync")) enabled.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (!enabled.empty()) enabled.push_back(CUPTI_ACTIVITY_KIND_DEVICE);
  for (CUpti_ActivityKind kind : enabled) {
    r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) {
      error = "cuptiActivityEnable(" + std::to_string(static_cast<int>(kind)) + ") failed: " + result_text(r);
      return false;
    }
  }
  std::atexit(at_exit);
  if (const char* ms = std::getenv("CUPTI_FLOOR_FLUSH_MS")) {
    const char* how = std::getenv("CUPTI_FLOOR_FLUSH");
    const bool forced = how == nullptr || std::strcmp(how, "default") != 0;
    const auto period = std::chrono::milliseconds(std::strtoul(ms, nullptr, 10));
    if (how != nullptr && std::strcmp(how, "period") == 0) {  // CUPTI's own worker thread flushes
      r = cuptiActivityFlushPeriod(static_cast<uint32_t>(period.count()));
      if (r != CUPTI_SUCCESS) {
        error = "cuptiActivityFlushPeriod failed: " + result_text(r);
        return false;
      }
    } else {
      std::thread([period, forced] {
        for (;;) {
          std::this_thread::sleep_for(period);
          cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
        }
      }).detach();
    }
  }
  if (g_verbose) {
    say("on: " + std::to_string(callbacks) + " API callbacks, 3 resource callbacks, " + std::to_string(enabled.size()) +
        " activity kinds, buffers of " + std::to_string(g_buffer_bytes / 1024) + " KiB");
  }
  return true;
}

__attribute__((constructor)) void cupti_floor_start() {
  if (const char* v = std::getenv("CUPTI_FLOOR_VERBOSE")) g_verbose = std::strcmp(v, "1") == 0;
  // Set here, not by a dynamic initializer: its order against this constructor is not specified (clang ran it after).
  g_buffer_bytes = size_t{asynccheck::Options{}.activity_buffer_kb} * 1024;
  if (const char* v = std::getenv("CUPTI_FLOOR_BUFFER_KB")) {
    const unsigned long kb = std::strtoul(v, nullptr, 10);
    if (kb >= 64 && kb <= 262144) g_buffer_bytes = size_t{kb} * 1024;
  }
  // asynccheck's device_buffer_kb option (default 0: CUPTI's own size), to compare the same CUPTI settings.
  size_t device_buffer_bytes = 0;
  if (const char* v = std::getenv("CUPTI_FLOOR_DEVICE_BUFFER_KB")) {
    device_buffer_bytes = std::strtoul(v, nullptr, 10) * 1024;
  }
  if (device_buffer_bytes != 0) {
    size_t size_size = sizeof device_buffer_bytes;
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size_size, &device_buffer_bytes);
  }
  std::string error;
  if (!start(error)) say("ERROR: " + error + "; the program runs unwatched");
}

}  // namespace
