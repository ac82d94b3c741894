// The managed_sync trap's kernel, in a file of its own so that traps.cu's line numbers (expect.txt) stay put.
#include <cuda_runtime.h>

__global__ void touch_pages(char* p, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * static_cast<size_t>(blockDim.x)) {
    p[i] += 1;
  }
}

void launch_touch(char* p, size_t n, cudaStream_t stream) { touch_pages<<<1024, 256, 0, stream>>>(p, n); }
