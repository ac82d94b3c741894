#include "cupti/activity.h"

#include <cupti.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include "common/signals_blocked.h"

namespace asynccheck::cupti {
namespace {

struct Completed {
  uint8_t* buffer;
  size_t size;
  size_t valid;
};

// Shared between CUPTI's callbacks and our worker. The application's threads never touch it.
struct State {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Completed> ready;  // handed off by bufferCompleted, not yet decoded
  OpVector ops;                 // decoded
  std::string device;
  uint64_t dropped = 0;
  uint64_t untimed = 0;     // work CUPTI delivered without timestamps (count_untimed)
  size_t buffer_bytes = 0;  // activity_buffer_kb (options.def), set by enable_activity
  // Buffers handed off and buffers decoded, ever: a flush waits until what was handed off when it returned is
  // decoded, not until the queue is empty (under a flood of records it would never be: the wait grew to hundreds
  // of ms a round with 8 threads launching flat out, measured on the H200).
  uint64_t completed = 0, decoded = 0;
  bool worker_started = false;
  // cuptiActivityFlushAll calls that failed (health.h), and the first one's words.
  uint64_t flush_failures = 0;
  std::string flush_error;
};

// Decoded buffers kept for CUPTI's next requests (buffer_requested says why). One is all a single thread needs
// (CUPTI fills one buffer while the last one is decoded); threads launching concurrently make CUPTI ask for more at
// once: with one spare, 8 threads took 92 page faults per 1000 calls against the floor's 20 (bench/api_calls, H200).
// Lock-free slots, not State::mu: CUPTI asks for buffers on the application's threads, and a thread a signal stops
// there must not hold a lock the report waits for.
// Four, or as many as fill kSpareGoal with smaller buffers, kSpares at most (64 and 128 KiB buffers keep 1 and 2 MiB):
// CUPTI asks for more small buffers at once, and with four spares of 256 KiB, 8 threads launching took ten times the
// floor's page faults (docs/performance-log.md). At most kSpareBytes, and always one: a spare is resident memory for
// the whole run, and with activity_buffer_kb at its largest (256 MiB) four would be a gigabyte.
constexpr size_t kSpares = 16;
constexpr size_t kSpareGoal = 4 << 20;
constexpr size_t kSpareBytes = 16 << 20;
std::atomic<uint8_t*> g_spares[kSpares];
std::atomic<size_t> g_spare_slots{kSpares};  // set by enable_activity from the buffer size

// On the application's threads: a load first, so that an empty pool costs no writes to the slots' cache lines.
uint8_t* take_spare() {
  for (auto& slot : g_spares) {
    if (slot.load(std::memory_order_relaxed) == nullptr) continue;
    if (uint8_t* b = slot.exchange(nullptr, std::memory_order_acquire)) return b;
  }
  return nullptr;
}

bool keep_spare(uint8_t* buffer) {
  const size_t slots = g_spare_slots.load(std::memory_order_relaxed);
  for (size_t i = 0; i < slots; ++i) {
    auto& slot = g_spares[i];
    uint8_t* empty = nullptr;
    if (slot.compare_exchange_strong(empty, buffer, std::memory_order_release, std::memory_order_relaxed)) return true;
  }
  return false;
}

}  // namespace

uint64_t count_untimed(const OpVector& ops) {
  uint64_t n = 0;
  for (const GpuOp& op : ops) n += op.kind != GpuOpKind::Sync && op.start_ns == 0;
  return n;
}

size_t spare_slots(size_t buffer_bytes) {
  if (buffer_bytes == 0) return kSpares;
  const size_t wanted = std::max<size_t>(4, kSpareGoal / buffer_bytes);
  return std::clamp<size_t>(std::min(wanted, kSpareBytes / buffer_bytes), 1, kSpares);
}

namespace {

State& state() {
  static State* s = new State;  // never destroyed: CUPTI may call back during exit
  return *s;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  State& s = state();
  // A decoded buffer if there is one, else a fresh mapping; the worker keeps up to spare_slots() decoded buffers and
  // unmaps the others. CUPTI writes over the whole of a buffer it is given, on the application thread that asked
  // for it: with a fresh mapping for every buffer that was a page fault per page (~2,000 for the 8 MiB buffers of
  // then), one buffer each round's forced flush: 155 faults per 1000 calls in bench/api_calls against the CUPTI
  // floor's 7.6, whose freed buffers malloc hands back (H200, docs/performance-log.md). A pool without a bound grows
  // towards its count x buffer_bytes of resident memory over a long run; a spare is only kept when CUPTI had that
  // many buffers out at once. Small by default (activity_buffer_kb): with several threads launching, CUPTI fills
  // a dozen or more at once, each resident, and a smaller buffer hands its records over sooner, so fewer calls wait
  // for them in the analysis' window (docs/performance-log.md measures 4 MiB, 1 MiB, 256 KiB and 64 KiB).
  uint8_t* b = take_spare();
  if (b == nullptr) {
    void* p = mmap(nullptr, s.buffer_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    b = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  *buffer = b;
  *size = b ? s.buffer_bytes : 0;  // 0: CUPTI drops the records, and counts them (dropped_records)
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size, size_t valid) {
  State& s = state();
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
  {
    std::lock_guard lock(s.mu);
    s.dropped += dropped;
    s.ready.push_back({buffer, size, valid});
    ++s.completed;
  }
  s.cv.notify_all();  // the worker and a flush may both be waiting
}

void worker() {
  State& s = state();
  std::unique_lock lock(s.mu);
  for (;;) {
    s.cv.wait(lock, [&] { return !s.ready.empty(); });
    Completed c = s.ready.front();
    s.ready.pop_front();
    lock.unlock();
    OpVector ops;
    std::string device;
    decode_buffer(c.buffer, c.valid, ops, &device);
    if (c.buffer != nullptr && !(c.size == s.buffer_bytes && keep_spare(c.buffer))) munmap(c.buffer, c.size);
    const uint64_t untimed = count_untimed(ops);
    lock.lock();
    s.untimed += untimed;
    s.ops.insert(s.ops.end(), std::make_move_iterator(ops.begin()), std::make_move_iterator(ops.end()));
    if (!device.empty() && s.device.empty()) s.device = device;
    ++s.decoded;  // one worker, first in first out: everything handed off before this buffer is decoded too
    s.cv.notify_all();
  }
}

}  // namespace

// Unified-memory migrations, where CUPTI can count them (not under MPS, not on every platform): optional evidence,
// so a refusal only leaves them out (a synchronization that waited for migrations then names none).
static void enable_migrations() {
  CUpti_ActivityUnifiedMemoryCounterConfig config[2] = {};
  const CUpti_ActivityUnifiedMemoryCounterKind kinds[2] = {
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
      CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH};
  for (int i = 0; i < 2; ++i) {
    config[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    config[i].kind = kinds[i];
    config[i].deviceId = 0;
    config[i].enable = 1;
  }
  if (cuptiActivityConfigureUnifiedMemoryCounter(config, 2) == CUPTI_SUCCESS) {
    (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
  }
}

void decode_buffer(const uint8_t* buffer, size_t valid, OpVector& out, std::string* device) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(const_cast<uint8_t*>(buffer), valid, &record) == CUPTI_SUCCESS) {
    GpuOp op;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        auto* r = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        op.kind = GpuOpKind::Memcpy;
        op.correlation_id = r->correlationId;
        op.start_ns = r->start;
        op.end_ns = r->end;
        op.device = r->deviceId;
        op.context = r->contextId;
        op.stream_id = r->streamId;
        op.bytes = r->bytes;
        op.copy_kind = r->copyKind;
        op.src_kind = r->srcKind;
        op.dst_kind = r->dstKind;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        auto* r = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        op.kind = GpuOpKind::Memset;
        op.correlation_id = r->correlationId;
        op.start_ns = r->start;
        op.end_ns = r->end;
        op.device = r->deviceId;
        op.context = r->contextId;
        op.stream_id = r->streamId;
        op.bytes = r->bytes;
        op.dst_kind = static_cast<uint8_t>(r->memoryKind);
        break;
      }
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        auto* r = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        op.kind = GpuOpKind::Kernel;
        op.correlation_id = r->correlationId;
        op.start_ns = r->start;
        op.end_ns = r->end;
        op.device = r->deviceId;
        op.context = r->contextId;
        op.stream_id = r->streamId;
        op.name = r->name ? r->name : "";
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        auto* r = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
        op.kind = GpuOpKind::Sync;
        op.correlation_id = r->correlationId;
        op.start_ns = r->start;
        op.end_ns = r->end;
        op.context = r->contextId;
        op.stream_id = r->streamId;
        op.sync_type = static_cast<uint8_t>(r->type);
        break;
      }
      case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER: {
        // Managed memory paged between host and device: device work that a synchronization can wait for, which no
        // call enqueued (correlation id 0).
        auto* r = reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter3*>(record);
        if (r->counterKind != CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD &&
            r->counterKind != CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH) {
          continue;
        }
        op.kind = GpuOpKind::Migration;
        op.start_ns = r->start;
        op.end_ns = r->end;
        const bool htod = r->counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD;
        op.copy_kind = htod ? 1 : 2;
        op.device = htod ? r->dstId : r->srcId;
        op.stream_id = kMigrationStream;
        op.bytes = r->value;
        break;
      }
      case CUPTI_ACTIVITY_KIND_DEVICE: {
        auto* r = reinterpret_cast<const CUpti_ActivityDevice5*>(record);
        if (device && device->empty() && r->name) *device = r->name;
        continue;
      }
      default: continue;
    }
    if (op.end_ns < op.start_ns) op.end_ns = op.start_ns;  // CUPTI reports 0 for records it could not time
    out.push_back(std::move(op));
  }
}

bool enable_activity(size_t buffer_bytes, size_t device_buffers, size_t device_buffer_bytes, std::string& error,
                     std::string& warning) {
  State& s = state();
  s.buffer_bytes = buffer_bytes;
  // Each round's forced flush (flush_activity) hands back CUPTI's device buffers with records still in flight, and
  // with several threads launching CUPTI never takes some of them back: its pool of device buffers (for kernel,
  // copy and memset timestamps) grows by about two per flush up to its limit, each ~3 MB of GPU memory and ~4.5 MB
  // of host memory (blocks malloc'ed in libcupti). Measured on the H100, bench/api_calls with 8 threads launching
  // flat out: 665 MB of such blocks after 30 s at CUPTI's default limit of 250 (~1.1 GB host and ~0.8 GB of the
  // program's GPU memory at the limit); the CUPTI floor with a forced flush every 400 ms the same, with a default
  // flush none; one or two threads none. Once the pool is used up, CUPTI delivers the work untimed (start 0;
  // count_untimed): 8 x 1M calls, a forced flush every 400 ms: 55% untimed at 16, 12.5% at 32,
  // 0.002% at 64 and at 250 (the limit was not reached in that run); 16 threads x 100k calls (test_threads): 19,788
  // untimed at 32, none at 250 (19,911 at 250 in another run: it varies). A default flush avoids all of it but
  // returns no buffer that holds an unfinished record: under steady launches records came up to 278 ms late, past
  // the compaction's margin. So CUPTI's limit by default (timestamps first: the report's evidence), device_buffers
  // to bound memory where a run of many launching threads needs it; untimed work is counted and said at exit. Set
  // before any context exists (CUPTI: "before initializing CUDA"), as start() runs.
  //
  // device_buffer_kb sets the size of each device buffer (CUPTI's own ~3 MB, 100,000 records, by default). Smaller
  // ones bound the memory the pool grows to, but hold fewer records in flight. Measured on the H100 with PyTorch's
  // launch-bound loop (bench/train.py: two launching threads, the main one and autograd's): at CUPTI's size RSS
  // +52 MiB in 100 s, rising ~80 MiB a minute (the CUPTI floor with a forced flush every second the same); at
  // 256 KiB +1.8 MiB in 110 s, none untimed. But four processes sharing the GPU for 270 s (the GPU behind the
  // host): 5.6M of bench/api_calls' operations untimed at 256 KiB against 4,473 at CUPTI's size, PyTorch 2.98M
  // against 50,730; over 24 minutes at 256 KiB, 122M of 127M operations came untimed (and the compaction, which
  // then kept their calls: analysis/feed.h, untimed_, fell behind). Timestamps are the report's evidence:
  // CUPTI's size by default, a smaller one for who needs the memory bound more than every timestamp.
  size_t limit = device_buffers, limit_size = sizeof limit;
  if (CUptiResult r = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, &limit_size, &limit);
      r != CUPTI_SUCCESS) {
    const char* msg = nullptr;
    cuptiGetResultString(r, &msg);
    warning = "CUPTI refused to cap its device buffers at " + std::to_string(device_buffers) + " (" +
              (msg ? msg : "?") + "): under many concurrent launches its memory may grow to its own limit";
  }
  if (device_buffer_bytes != 0) {
    size_t size = device_buffer_bytes, size_size = sizeof size;
    if (CUptiResult r = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size_size, &size);
        r != CUPTI_SUCCESS) {
      const char* msg = nullptr;
      cuptiGetResultString(r, &msg);
      warning += std::string(warning.empty() ? "" : "; ") + "CUPTI refused device buffers of " +
                 std::to_string(device_buffer_bytes / 1024) + " KiB (" + (msg ? msg : "?") + "): its own size applies";
    }
  }
  g_spare_slots.store(spare_slots(buffer_bytes), std::memory_order_relaxed);
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
    error = "cuptiActivityRegisterCallbacks failed";
    return false;
  }
  // Only the synchronization records of explicit synchronization calls, not of every API (far fewer records).
  cuptiActivityEnableAllSyncRecords(0);
  for (CUpti_ActivityKind kind :
       {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_DEVICE}) {
    CUptiResult r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) {
      const char* msg = nullptr;
      cuptiGetResultString(r, &msg);
      error = "cuptiActivityEnable(" + std::to_string(static_cast<int>(kind)) + ") failed: " + (msg ? msg : "?");
      return false;
    }
  }
  enable_migrations();
  if (!s.worker_started) {
    s.worker_started = true;
    // The report written on a signal (interpose/core.cpp) waits for the worker to decode the last buffers.
    with_signals_blocked([] { std::thread(worker).detach(); });  // lives until the process ends; no lock while idle
  }
  return true;
}

uint64_t flush_activity(bool forced) {
  const CUptiResult r = cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  if (r != CUPTI_SUCCESS) {
    State& s = state();
    std::lock_guard lock(s.mu);
    if (s.flush_failures++ == 0) {
      const char* msg = nullptr;
      s.flush_error = cuptiGetResultString(r, &msg) == CUPTI_SUCCESS && msg ? msg : "CUPTI error " + std::to_string(r);
    }
  }
  return wait_decoded();  // the flush has handed off every buffer it completed
}

uint64_t wait_decoded() {
  State& s = state();
  std::unique_lock lock(s.mu);
  const uint64_t target = s.completed;
  s.cv.wait(lock, [&] { return s.decoded >= target; });
  return target;
}

uint64_t buffers_completed() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.completed;
}

OpVector take_ops() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return std::move(s.ops);
}

std::string device_name() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.device;
}

uint64_t untimed_records() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.untimed;
}

void flush_health(Health& h) {
  State& s = state();
  std::lock_guard lock(s.mu);
  h.flush_failures = s.flush_failures;
  h.flush_error = s.flush_error;
}

uint64_t dropped_records() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.dropped;
}

}  // namespace asynccheck::cupti
