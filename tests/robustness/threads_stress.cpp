// The program under test for the thread-stress test: THREADS threads, each making CALLS watched CUDA calls in its
// own non-blocking stream (256-byte pinned copies, memsets, event records, stream queries, a synchronize every
// 256 of them), with no kernels so that it needs no nvcc. It counts every CUDA call it makes and prints the
// total, which asynccheck's report must match exactly. usage: threads_stress THREADS CALLS_PER_THREAD
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

std::atomic<unsigned long long> g_calls{0};
std::atomic<bool> g_failed{false};

// Every CUDA call goes through here: counted, and checked.
void check(cudaError_t err, const char* what) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  if (err != cudaSuccess && err != cudaErrorNotReady) {  // cudaStreamQuery answers "not ready" as a result
    std::fprintf(stderr, "threads_stress: %s: %s\n", what, cudaGetErrorString(err));
    g_failed = true;
  }
}

void worker(unsigned long long calls) {
  cudaStream_t stream;
  cudaEvent_t event;
  void* host = nullptr;
  void* device = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaEventCreate(&event), "cudaEventCreate");
  check(cudaMallocHost(&host, 256), "cudaMallocHost");
  check(cudaMalloc(&device, 256), "cudaMalloc");
  for (unsigned long long i = 0; i < calls; ++i) {
    switch (i % 4) {
      case 0: check(cudaMemcpyAsync(device, host, 256, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync"); break;
      case 1: check(cudaMemsetAsync(device, 0, 256, stream), "cudaMemsetAsync"); break;
      case 2: check(cudaEventRecord(event, stream), "cudaEventRecord"); break;
      default: check(cudaStreamQuery(stream), "cudaStreamQuery"); break;
    }
    if (i % 256 == 255) check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check(cudaFree(device), "cudaFree");
  check(cudaFreeHost(host), "cudaFreeHost");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: threads_stress THREADS CALLS_PER_THREAD\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const unsigned long long calls = std::strtoull(argv[2], nullptr, 10);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {  // not a watched call: not counted
    std::fprintf(stderr, "threads_stress: no CUDA device\n");
    return 77;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, calls);
  for (std::thread& t : pool) t.join();
  std::printf("calls %llu\n", g_calls.load());
  return g_failed ? 1 : 0;
}
