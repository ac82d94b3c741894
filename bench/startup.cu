// Start-up benchmark: an empty CUDA program. cudaFree(0) creates the context (the usual way to initialize
// CUDA), then the program exits. Timed from outside (process wall time, exit included); the RESULT line only
// says that it ran.
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  const cudaError_t e = cudaFree(nullptr);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "startup: cudaFree(0) failed: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::printf("RESULT startup=1\n");
  return 0;
}
