// Source: seed 003, book chapter 5.7 "Memory copy": the driver API's typed 1D copies (cuMemcpyHtoD,
// cuMemcpyDtoH, cuMemcpyDtoD), cudaMemcpy with cudaMemcpyDefault under unified virtual addressing, the
// chapter's my_cuMemcpyHtoD built on cuMemcpy3D, synchronous vs asynchronous copies (pageable and
// pinned host memory), and the copy engine count (CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT).
// The chapter shows declarations and fragments, not a program; this sample calls each in turn.
// Changes, and why:
// - my_cuMemcpyHtoD: the chapter's dst is typed CUdevice and the body reads an undeclared srcHost;
//   here dst is a CUdeviceptr, src is used, and the struct is spelled CUDA_MEMCPY3D (the chapter's
//   CUDA_MEMCPY_3D does not exist). The chapter says Height == 0 means a 1D copy and Depth == 0 a 2D
//   one; current CUDA takes Height = Depth = 1 for that (with 0, CUDA 13.0 on driver 580 returns
//   CUDA_SUCCESS and copies nothing: measured). C's "= {0}" is "= {}" in C++.
// - The runtime creates the context (cudaFree(0)); the driver calls then use that primary context.
// - The async copies use the NULL stream, as the chapter says suffices for CPU/GPU concurrency.
// Usage: seed003_copy_kinds [bytes] (default 64 MiB). Every copy's contents are checked; a failure
// exits 1 with one line on stderr.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) {
        const char* name = "?";
        cuGetErrorName(r, &name);
        std::fprintf(stderr, "seed003_copy_kinds: %s failed: %s\n", what, name);
        std::exit(1);
    }
}
#define CU(call) check((call), #call)

static void check_rt(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "seed003_copy_kinds: %s failed: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}
#define RT(call) check_rt((call), #call)

CUresult
my_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t N)
{
    CUDA_MEMCPY3D cp = {};
    cp.srcMemoryType = CU_MEMORYTYPE_HOST;
    cp.srcHost = src;
    cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.dstDevice = dst;
    cp.WidthInBytes = N;
    cp.Height = 1;  // the chapter's 0 ("1D") now copies nothing
    cp.Depth = 1;
    return cuMemcpy3D(&cp);
}

static void fill(unsigned char* p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(i * 13 + seed);
}

// The copy named by what must have brought src's contents into dst; dst is cleared for the next one.
static void expect_same(unsigned char* dst, const unsigned char* src, size_t n, const char* what) {
    if (std::memcmp(dst, src, n) != 0) {
        std::fprintf(stderr, "seed003_copy_kinds: %s: contents differ\n", what);
        std::exit(1);
    }
    std::memset(dst, 0, n);
}

int main(int argc, char* argv[]) {
    size_t N = 64u << 20;
    if (argc > 2) {
        std::fprintf(stderr, "usage: seed003_copy_kinds [bytes]\n");
        return 2;
    }
    if (argc == 2) {
        char* end;
        N = std::strtoull(argv[1], &end, 10);
        if (*end != '\0' || N == 0) {
            std::fprintf(stderr, "usage: seed003_copy_kinds [bytes]\n");
            return 2;
        }
    }

    // Set-up: context, buffers (pageable and pinned) and the copy engine count.
    RT(cudaFree(0));
    CUdevice dev;
    CU(cuCtxGetDevice(&dev));
    int engines = 0;
    CU(cuDeviceGetAttribute(&engines, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, dev));
    std::printf("asyncEngineCount: %d\n", engines);

    unsigned char* src = static_cast<unsigned char*>(std::malloc(N));  // pageable
    unsigned char* dst = static_cast<unsigned char*>(std::calloc(N, 1));
    if (src == nullptr || dst == nullptr) {
        std::fprintf(stderr, "seed003_copy_kinds: cannot allocate %zu host bytes\n", N);
        return 1;
    }
    void* pinned_src;
    void* pinned_dst;
    CU(cuMemAllocHost(&pinned_src, N));
    CU(cuMemAllocHost(&pinned_dst, N));
    CUdeviceptr d0, d1;
    CU(cuMemAlloc(&d0, N));
    CU(cuMemAlloc(&d1, N));

    // 5.7: driver API, one function per direction (synchronous forms, pageable host memory).
    fill(src, N, 1);
    CU(cuMemcpyHtoD(d0, src, N));
    CU(cuMemcpyDtoD(d1, d0, N));
    CU(cuMemcpyDtoH(dst, d1, N));
    expect_same(dst, src, N, "cuMemcpyHtoD/cuMemcpyDtoD/cuMemcpyDtoH");
    std::printf("driver API HtoD, DtoD, DtoH: ok\n");

    // 5.7.2: unified virtual addressing, the runtime infers the direction from the pointers.
    fill(src, N, 2);
    RT(cudaMemcpy(reinterpret_cast<void*>(d0), src, N, cudaMemcpyDefault));
    RT(cudaMemcpy(reinterpret_cast<void*>(d1), reinterpret_cast<void*>(d0), N, cudaMemcpyDefault));
    RT(cudaMemcpy(dst, reinterpret_cast<void*>(d1), N, cudaMemcpyDefault));
    expect_same(dst, src, N, "cudaMemcpy with cudaMemcpyDefault");
    std::printf("cudaMemcpy cudaMemcpyDefault H2D, D2D, D2H: ok\n");

    // 5.7.4: a host-to-device copy through cuMemcpy3D.
    fill(src, N, 3);
    CU(my_cuMemcpyHtoD(d0, src, N));
    CU(cuMemcpyDtoH(dst, d0, N));
    expect_same(dst, src, N, "my_cuMemcpyHtoD (cuMemcpy3D)");
    std::printf("my_cuMemcpyHtoD (cuMemcpy3D): ok\n");

    // 5.7.1: asynchronous copies on the NULL stream, from/to pageable memory...
    fill(src, N, 4);
    CU(cuMemcpyHtoDAsync(d0, src, N, 0));
    CU(cuMemcpyDtoHAsync(dst, d0, N, 0));
    CU(cuStreamSynchronize(0));
    expect_same(dst, src, N, "cuMemcpyHtoDAsync/cuMemcpyDtoHAsync, pageable");
    std::printf("cuMemcpyHtoDAsync, cuMemcpyDtoHAsync pageable: ok\n");

    // ...and from/to pinned memory, where only they are truly asynchronous.
    fill(static_cast<unsigned char*>(pinned_src), N, 5);
    CU(cuMemcpyHtoDAsync(d1, pinned_src, N, 0));
    CU(cuMemcpyDtoHAsync(pinned_dst, d1, N, 0));
    CU(cuStreamSynchronize(0));
    expect_same(static_cast<unsigned char*>(pinned_dst), static_cast<unsigned char*>(pinned_src), N,
                "cuMemcpyHtoDAsync/cuMemcpyDtoHAsync, pinned");
    std::printf("cuMemcpyHtoDAsync, cuMemcpyDtoHAsync pinned: ok\n");

    CU(cuMemFree(d0));
    CU(cuMemFree(d1));
    CU(cuMemFreeHost(pinned_src));
    CU(cuMemFreeHost(pinned_dst));
    std::free(src);
    std::free(dst);
    return 0;
}
