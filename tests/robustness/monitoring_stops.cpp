// A program that stops asynccheck's monitoring in the middle of its run, as another CUPTI client can
// (test_monitoring_stops.cpp, GPU machine): a pageable async copy (a finding), then cuptiFinalize() (what Kineto
// does when it tears CUPTI down), then the same copy again. "finalize" does that; "control" the same without the
// cuptiFinalize. Either prints "done" and exits 0; without a GPU it exits 77 before doing anything.
#include <cuda_runtime_api.h>
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "monitoring_stops: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(70);
  }
}

// 64 MiB from pageable memory: staged by the driver, the call holds the host for milliseconds (a finding).
void pageable_copy(cudaStream_t s, std::vector<char>& host, void* dev) {
  check(cudaMemcpyAsync(dev, host.data(), host.size(), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

}  // namespace

int main(int argc, char** argv) {
  const bool finalize = argc > 1 && std::strcmp(argv[1], "finalize") == 0;
  if (argc < 2 || (!finalize && std::strcmp(argv[1], "control") != 0)) {
    std::fprintf(stderr, "usage: monitoring_stops finalize|control\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;  // no GPU
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  std::vector<char> host(64 << 20, 1);
  void* dev = nullptr;
  check(cudaMalloc(&dev, host.size()), "cudaMalloc");
  pageable_copy(s, host, dev);
  if (finalize) {
    // CUPTI asks for synchronized work and flushed buffers before a detach from outside a callback.
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    // On stderr: under asynccheck CUPTI may answer otherwise than with no client, and stdout must be the same.
    std::fprintf(stderr, "monitoring_stops: cuptiFinalize returned %d\n", static_cast<int>(cuptiFinalize()));
  }
  pageable_copy(s, host, dev);
  check(cudaFree(dev), "cudaFree");
  check(cudaStreamDestroy(s), "cudaStreamDestroy");
  std::printf("done\n");
  return 0;
}
