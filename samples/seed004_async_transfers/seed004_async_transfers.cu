// Source: seed 004, the PGI article "CUDA Fortran Asynchronous Data Transfers": sequential transfer and
// execute, then three asynchronous versions over nStreams streams (V1: loop of {H2D copy, kernel, D2H
// copy}; V2: all H2D copies, all kernels, all D2H copies; V3: V2 with cudaEventRecord(dummyEvent,
// stream[i]) after each kernel), each timed with events on stream 0.
// Changes, and why:
// - Translated from CUDA Fortran to CUDA C++ the way NVIDIA's CUDA C version of the article does it
//   (n = 4*1024*blockSize*nStreams, the sin/cos/sqrt kernel, cudaMallocHost, cudaMemcpy for the
//   sequential version); Fortran's 1-based a_d(offset+1) is &d_a[offset]; "a = 0" is memset.
// - V3, which the article describes but NVIDIA's C version leaves out, is included.
// - The streams are created after the sequential version, where the article sets them up.
// - Self-check: after each version the maximum |a[i] - 1| must be at most 1e-5 (each element is
//   0 + sqrt(sin^2 + cos^2)); otherwise one line on stderr and exit 1.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void kernel(float *a, int offset)
{
    int i = offset + threadIdx.x + blockIdx.x * blockDim.x;
    float x = (float)i;
    float s = sinf(x);
    float c = cosf(x);
    a[i] = a[i] + sqrtf(s * s + c * c);
}

static float maxError(const float *a, int n)
{
    float maxE = 0;
    for (int i = 0; i < n; i++) {
        float error = std::fabs(a[i] - 1.0f);
        if (error > maxE) maxE = error;
    }
    return maxE;
}

// Fails the run, naming the version, if its results are wrong or a CUDA call failed.
static void check(const char *version, const float *a, int n)
{
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        std::fprintf(stderr, "seed004_async_transfers: %s: CUDA error: %s\n", version, cudaGetErrorString(err));
        std::exit(1);
    }
    float e = maxError(a, n);
    if (!(e <= 1e-5f)) {
        std::fprintf(stderr, "seed004_async_transfers: %s: max error %e > 1e-5\n", version, e);
        std::exit(1);
    }
}

int main()
{
    const int blockSize = 256, nStreams = 4;
    const int n = 4 * 1024 * blockSize * nStreams;
    const int strSize = n / nStreams;
    const int strGridSize = strSize / blockSize;
    const size_t bytes = n * sizeof(float);
    const size_t strBytes = strSize * sizeof(float);

    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        std::fprintf(stderr, "seed004_async_transfers: no CUDA device\n");
        return 1;
    }
    std::printf("Device: %s\n", prop.name);

    float *a, *a_d;
    cudaMallocHost((void **)&a, bytes);  // pinned
    cudaMalloc((void **)&a_d, bytes);

    float ms;
    cudaEvent_t startEvent, stopEvent, dummyEvent;
    cudaEventCreate(&startEvent);
    cudaEventCreate(&stopEvent);
    cudaEventCreate(&dummyEvent);

    // baseline case - sequential transfer and execute
    std::memset(a, 0, bytes);
    cudaEventRecord(startEvent, 0);
    cudaMemcpy(a_d, a, bytes, cudaMemcpyHostToDevice);
    kernel<<<n / blockSize, blockSize>>>(a_d, 0);
    cudaMemcpy(a, a_d, bytes, cudaMemcpyDeviceToHost);
    cudaEventRecord(stopEvent, 0);
    cudaEventSynchronize(stopEvent);
    cudaEventElapsedTime(&ms, startEvent, stopEvent);
    std::printf("Time for sequential transfer and execute (ms): %f\n", ms);
    check("sequential", a, n);

    // Setup for multiple stream processing
    cudaStream_t stream[nStreams];
    for (int i = 0; i < nStreams; ++i)
        cudaStreamCreate(&stream[i]);

    // asynchronous version 1: loop over {copy, kernel, copy}
    std::memset(a, 0, bytes);
    cudaEventRecord(startEvent, 0);
    for (int i = 0; i < nStreams; ++i) {
        int offset = i * strSize;
        cudaMemcpyAsync(&a_d[offset], &a[offset], strBytes, cudaMemcpyHostToDevice, stream[i]);
        kernel<<<strGridSize, blockSize, 0, stream[i]>>>(a_d, offset);
        cudaMemcpyAsync(&a[offset], &a_d[offset], strBytes, cudaMemcpyDeviceToHost, stream[i]);
    }
    cudaEventRecord(stopEvent, 0);
    cudaEventSynchronize(stopEvent);
    cudaEventElapsedTime(&ms, startEvent, stopEvent);
    std::printf("Time for asynchronous V1 transfer and execute (ms): %f\n", ms);
    check("V1", a, n);

    // asynchronous version 2: loop over copy, loop over kernel, loop over copy
    std::memset(a, 0, bytes);
    cudaEventRecord(startEvent, 0);
    for (int i = 0; i < nStreams; ++i) {
        int offset = i * strSize;
        cudaMemcpyAsync(&a_d[offset], &a[offset], strBytes, cudaMemcpyHostToDevice, stream[i]);
    }
    for (int i = 0; i < nStreams; ++i) {
        int offset = i * strSize;
        kernel<<<strGridSize, blockSize, 0, stream[i]>>>(a_d, offset);
    }
    for (int i = 0; i < nStreams; ++i) {
        int offset = i * strSize;
        cudaMemcpyAsync(&a[offset], &a_d[offset], strBytes, cudaMemcpyDeviceToHost, stream[i]);
    }
    cudaEventRecord(stopEvent, 0);
    cudaEventSynchronize(stopEvent);
    cudaEventElapsedTime(&ms, startEvent, stopEvent);
    std::printf("Time for asynchronous V2 transfer and execute (ms): %f\n", ms);
    check("V2", a, n);

    // asynchronous version 3: as version 2, with a dummy event recorded after each kernel
    std::memset(a, 0, bytes);
    cudaEventRecord(startEvent, 0);
    for (int i = 0; i < nStreams; ++i) {
        int offset = i * strSize;
        cudaMemcpyAsync(&a_d[offset], &a[offset], strBytes, cudaMemcpyHostToDevice, stream[i]);
    }
    for (int i = 0; i < nStreams; ++i) {
        int offset = i * strSize;
        kernel<<<strGridSize, blockSize, 0, stream[i]>>>(a_d, offset);
        // Add a dummy event
        cudaEventRecord(dummyEvent, stream[i]);
    }
    for (int i = 0; i < nStreams; ++i) {
        int offset = i * strSize;
        cudaMemcpyAsync(&a[offset], &a_d[offset], strBytes, cudaMemcpyDeviceToHost, stream[i]);
    }
    cudaEventRecord(stopEvent, 0);
    cudaEventSynchronize(stopEvent);
    cudaEventElapsedTime(&ms, startEvent, stopEvent);
    std::printf("Time for asynchronous V3 transfer and execute (ms): %f\n", ms);
    check("V3", a, n);

    // cleanup
    cudaEventDestroy(startEvent);
    cudaEventDestroy(stopEvent);
    cudaEventDestroy(dummyEvent);
    for (int i = 0; i < nStreams; ++i)
        cudaStreamDestroy(stream[i]);
    cudaFree(a_d);
    cudaFreeHost(a);
    return 0;
}
