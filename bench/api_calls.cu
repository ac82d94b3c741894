// API-call microbenchmark: the host-side cost of the calls asynccheck watches.
//
// usage: api_calls CALLS_PER_THREAD [THREADS [BATCH]]     (defaults: -, 1, 256)
// With API_CALLS_SECONDS=S in the environment, each thread also stops after S seconds of its loop, whichever comes
// first (long runs: scripts/soak.py).
//
// Each thread has its own non-blocking stream, a 256 B pinned host buffer, a 256 B device buffer and an event,
// and repeats the cycle
//     empty kernel launch, cudaMemcpyAsync 256 B pinned H2D, cudaEventRecord, cudaStreamQuery
// (four watched calls). Only the enqueueing is timed: steady_clock around each batch of BATCH calls, then a
// cudaStreamSynchronize outside the timed region, so the GPU queue never fills and the GPU's execution never
// shows in the figure. A warm-up (module load, first launch, first copy) comes first, untimed.
//
// Prints one line (key=value, machine-readable), e.g.
//     RESULT threads=1 calls=1000000 timed_ns=1834000000 ns_per_call=1834.0 wall_ns=... max_rss_kb=... minflt_per_kcall=...
// calls: the timed calls of all threads; timed_ns: the sum over threads of their timed enqueue time;
// ns_per_call = timed_ns / calls (the host time one call costs the thread that makes it); wall_ns: from before
// the threads' setup to the last thread's end (setup, warm-up and syncs included); max_rss_kb: getrusage's peak
// RSS at that point (before exit: the exit-time analysis of a tool is not in it); minflt_per_kcall: page faults
// the calling threads took in their loops (syncs included), per 1000 calls: memory a tool makes them touch afresh.
#include <cuda_runtime.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

__global__ void empty_kernel() {}

constexpr size_t kCopyBytes = 256;
constexpr int kCallsPerCycle = 4;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "api_calls: %s failed: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

bool parse(const char* s, uint64_t& out) {
  char* end = nullptr;
  out = std::strtoull(s, &end, 10);
  return end != s && *end == '\0';
}

struct Worker {
  cudaStream_t stream = nullptr;
  void* host = nullptr;
  void* device = nullptr;
  cudaEvent_t event = nullptr;
  uint64_t timed_ns = 0;
  uint64_t calls = 0;
  uint64_t minor_faults = 0;
};

long thread_minor_faults() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

// One call of the cycle; returns false on an error (cudaErrorNotReady from the query is not one).
inline cudaError_t call(Worker& w, uint64_t i) {
  switch (i % kCallsPerCycle) {
    case 0:
      empty_kernel<<<1, 1, 0, w.stream>>>();
      return cudaGetLastError();
    case 1: return cudaMemcpyAsync(w.device, w.host, kCopyBytes, cudaMemcpyHostToDevice, w.stream);
    case 2: return cudaEventRecord(w.event, w.stream);
    default: {
      cudaError_t e = cudaStreamQuery(w.stream);
      return e == cudaErrorNotReady ? cudaSuccess : e;
    }
  }
}

void setup(Worker& w) {
  check(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaMallocHost(&w.host, kCopyBytes), "cudaMallocHost");
  std::memset(w.host, 1, kCopyBytes);
  check(cudaMalloc(&w.device, kCopyBytes), "cudaMalloc");
  check(cudaEventCreateWithFlags(&w.event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  // Warm-up: module load, first launch, first copy, untimed.
  for (uint64_t i = 0; i < 64 * kCallsPerCycle; ++i) check(call(w, i), "warm-up call");
  check(cudaStreamSynchronize(w.stream), "cudaStreamSynchronize");
}

void run(Worker& w, uint64_t calls, uint64_t batch, std::atomic<int>& ready, int threads, double seconds) {
  setup(w);
  ready.fetch_add(1);
  while (ready.load() < threads) std::this_thread::yield();  // all threads start the timed loop together
  const long faults0 = thread_minor_faults();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t done = 0;
  while (done < calls && (seconds <= 0 || std::chrono::steady_clock::now() < deadline)) {
    const uint64_t n = calls - done < batch ? calls - done : batch;
    cudaError_t first_error = cudaSuccess;
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t i = done; i < done + n; ++i) {
      cudaError_t e = call(w, i);
      if (e != cudaSuccess && first_error == cudaSuccess) first_error = e;
    }
    const auto t1 = std::chrono::steady_clock::now();
    check(first_error, "a timed call");
    w.timed_ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    done += n;
    check(cudaStreamSynchronize(w.stream), "cudaStreamSynchronize");  // outside the timed region
  }
  w.calls = done;
  w.minor_faults = static_cast<uint64_t>(thread_minor_faults() - faults0);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t calls = 0, threads = 1, batch = 256;
  if (argc < 2 || argc > 4 || !parse(argv[1], calls) || (argc > 2 && !parse(argv[2], threads)) ||
      (argc > 3 && !parse(argv[3], batch)) || calls == 0 || threads == 0 || threads > 256 || batch == 0) {
    std::fprintf(stderr, "usage: api_calls CALLS_PER_THREAD [THREADS [BATCH]]\n");
    return 2;
  }
  // Whole cycles per batch and per thread, so each figure has the same mix of calls.
  batch = (batch + kCallsPerCycle - 1) / kCallsPerCycle * kCallsPerCycle;
  calls = (calls + kCallsPerCycle - 1) / kCallsPerCycle * kCallsPerCycle;
  double seconds = 0;
  if (const char* s = std::getenv("API_CALLS_SECONDS")) {
    char* end = nullptr;
    seconds = std::strtod(s, &end);
    if (end == s || *end != '\0' || !(seconds > 0)) {
      std::fprintf(stderr, "api_calls: API_CALLS_SECONDS='%s': expected a positive number of seconds\n", s);
      return 2;
    }
  }
  check(cudaFree(nullptr), "cudaFree(0)");  // context creation, untimed

  std::vector<Worker> workers(threads);
  std::atomic<int> ready{0};
  const int n_threads = static_cast<int>(threads);
  const auto w0 = std::chrono::steady_clock::now();
  if (threads == 1) {
    run(workers[0], calls, batch, ready, n_threads, seconds);
  } else {
    std::vector<std::thread> pool;
    for (auto& w : workers) {
      pool.emplace_back([&w, calls, batch, &ready, n_threads, seconds] {
        run(w, calls, batch, ready, n_threads, seconds);
      });
    }
    for (auto& t : pool) t.join();
  }
  const auto w1 = std::chrono::steady_clock::now();

  uint64_t timed = 0, total = 0, faults = 0;
  for (const auto& w : workers) {
    timed += w.timed_ns;
    total += w.calls;
    faults += w.minor_faults;
  }
  for (auto& w : workers) {
    cudaEventDestroy(w.event);
    cudaFree(w.device);
    cudaFreeHost(w.host);
    cudaStreamDestroy(w.stream);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("RESULT threads=%" PRIu64 " calls=%" PRIu64 " batch=%" PRIu64 " timed_ns=%" PRIu64
              " ns_per_call=%.1f wall_ns=%lld max_rss_kb=%ld minflt_per_kcall=%.3f\n",
              threads, total, batch, timed, total ? static_cast<double>(timed) / static_cast<double>(total) : 0.0,
              static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(w1 - w0).count()),
              ru.ru_maxrss, total ? 1000.0 * static_cast<double>(faults) / static_cast<double>(total) : 0.0);
  std::fflush(stdout);
  return 0;
}
