// NVTX ranges around two stalls, so that each finding names the innermost range it happened in
// (docs/report-format.md, "NVTX ranges"): a pageable cudaMemcpyAsync inside "step" > "copy_inputs" (NVTX's
// default domain), and a kernel launched into the legacy default stream inside "step" > "forward" of the domain
// "nvtx_sample", which waits on the GPU for a kernel in a blocking stream. The copy back after every range is
// popped is in none. Written for asynccheck's tests (samples/nvtx_ranges/expect.txt), not taken from a document.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}

static int fail(const char* what) {
    std::fprintf(stderr, "nvtx_ranges: %s\n", what);
    return 1;
}

int main() {
    int clock_khz = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0) != cudaSuccess || clock_khz <= 0)
        return fail("cannot read the device clock rate");
    const long long cycles = (long long)clock_khz * 20;  // kHz * 20 ms
    const size_t bytes = 256u << 20;
    char* host = static_cast<char*>(std::malloc(bytes));  // pageable
    if (host == nullptr) return fail("cannot allocate host memory");
    std::memset(host, 7, bytes);
    char* device = nullptr;
    cudaMalloc(&device, bytes);
    cudaStream_t copies, blocking;
    cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking);
    cudaStreamCreate(&blocking);  // blocking: the legacy default stream waits for it
    // The first launch loads the module (lazy loading): done here, outside the ranges, so that it is not a finding.
    spin<<<1, 1, 0, copies>>>(1);
    cudaDeviceSynchronize();

    nvtxDomainHandle_t domain = nvtxDomainCreateA("nvtx_sample");
    nvtxEventAttributes_t forward = {};
    forward.version = NVTX_VERSION;
    forward.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    forward.messageType = NVTX_MESSAGE_TYPE_ASCII;
    forward.message.ascii = "forward";

    nvtxRangePushA("step");
    nvtxRangePushA("copy_inputs");
    cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, copies);
    nvtxRangePop();
    nvtxDomainRangePushEx(domain, &forward);
    spin<<<1, 1, 0, blocking>>>(cycles);
    spin<<<1, 1>>>(cycles);
    nvtxDomainRangePop(domain);
    nvtxRangePop();

    cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, copies);
    cudaDeviceSynchronize();
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        std::fprintf(stderr, "nvtx_ranges: CUDA error: %s\n", cudaGetErrorString(err));
        return 1;
    }
    if (host[0] != 7 || host[bytes - 1] != 7) return fail("the copies did not round-trip");
    std::printf("nvtx_ranges: copied %zu bytes there and back inside and outside NVTX ranges\n", bytes);
    cudaFree(device);
    std::free(host);
    return 0;
}
