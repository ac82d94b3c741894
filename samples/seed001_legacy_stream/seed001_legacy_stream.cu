// Source: seed 001 (notes on CUDA streams), the example it takes from the CUDA "Stream synchronization
// behavior" page: k_1 in a blocking stream s, k_2 in the legacy default stream, k_3 in s. Because the
// legacy stream waits on all blocking streams and they wait on it, k_2 waits for k_1 and k_3 for k_2.
// Changes, and why:
// - The page's kernels are empty. Here each one sleeps ~20 ms on the GPU (seed 000's gpu_sleep, cycles
//   from the device clock rate) and records its start/end %globaltimer and a sequence number, so the
//   order the GPU really ran them in can be checked.
// - k_1, k_2 and k_3 are three launches of one kernel, k. Under lazy loading (the default since CUDA
//   12.2) the first launch of each kernel loads it, and "loading kernels might require context
//   synchronization": with three kernels, k_2 waited for k_1 on the GPU even with a non-blocking s
//   or per-thread stream 0 (measured on an H200), which would hide the difference this sample shows.
// - k_1, the process's first launch, also loads the module and holds the host (0.2-0.3 ms on an
//   H200, 0.03 ms with CUDA_MODULE_LOADING=EAGER), so expect.txt leaves it unnamed.
// - "seed001_legacy_stream nonblocking" creates s with cudaStreamNonBlocking: then k_2 need not wait.
// - Built with --default-stream per-thread (target seed001_legacy_stream_ptds), the <<<1, 1>>> launch
//   goes to the per-thread default stream, which synchronizes only with the legacy stream, not with s.
// Check: all three kernels ran, k_3 after k_1 (same stream), and, only for the legacy build with a
// blocking s, k_2 after k_1 and k_3 after k_2.
#include <cstdio>
#include <cstring>

using clock_value_t = long long;

struct Record {
    unsigned long long start, end;  // %globaltimer, ns
    int done_before;                // kernels already finished when this one started
    int seq;                        // order of completion, 1-based; 0 = never ran
};

__device__ Record records[3];
__device__ int finished;

__device__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ void gpu_sleep(clock_value_t sleep_cycles) {
    clock_value_t start = clock64();
    clock_value_t cycles_elapsed;
    do { cycles_elapsed = clock64() - start; }
    while (cycles_elapsed < sleep_cycles);
}

// Launched <<<1, 1>>>: which is 0 for k_1, 1 for k_2, 2 for k_3.
__global__ void k(int which, clock_value_t sleep_cycles) {
    Record& r = records[which];
    r.start = globaltimer();
    r.done_before = atomicAdd(&finished, 0);
    gpu_sleep(sleep_cycles);
    r.end = globaltimer();
    __threadfence();
    r.seq = atomicAdd(&finished, 1) + 1;
}

static int fail(const char* why) {
    std::fprintf(stderr, "seed001_legacy_stream: %s\n", why);
    return 1;
}

int main(int argc, char* argv[]) {
    bool nonblocking = false;
    if (argc == 2 && std::strcmp(argv[1], "nonblocking") == 0) nonblocking = true;
    else if (argc != 1) {
        std::fprintf(stderr, "usage: seed001_legacy_stream [nonblocking]\n");
        return 2;
    }
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
    const bool legacy = false;
#else
    const bool legacy = true;
#endif
    int clock_khz = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0) != cudaSuccess || clock_khz <= 0)
        return fail("cannot read the device clock rate");
    const clock_value_t sleep_cycles = (clock_value_t)clock_khz * 20;  // kHz * 20 ms

    cudaStream_t s;
    if (nonblocking)
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    else
        cudaStreamCreate(&s);

    k<<<1, 1, 0, s>>>(0, sleep_cycles);  // k_1
    k<<<1, 1>>>(1, sleep_cycles);        // k_2
    k<<<1, 1, 0, s>>>(2, sleep_cycles);  // k_3

    cudaDeviceSynchronize();
    Record r[3];
    cudaMemcpyFromSymbol(r, records, sizeof r);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        std::fprintf(stderr, "seed001_legacy_stream: CUDA error: %s\n", cudaGetErrorString(err));
        return 1;
    }

    const bool k2_after_k1 = r[1].start >= r[0].end && r[1].done_before >= 1;
    const bool k3_after_k2 = r[2].start >= r[1].end && r[2].done_before >= 2;
    const bool k3_after_k1 = r[2].start >= r[0].end;
    std::printf("stream s: %s; default stream: %s\n",
                nonblocking ? "cudaStreamNonBlocking" : "blocking (cudaStreamCreate)",
                legacy ? "legacy" : "per-thread");
    std::printf("k_2 started after k_1 finished: %s\n", k2_after_k1 ? "yes" : "no");
    std::printf("k_3 started after k_2 finished: %s\n", k3_after_k2 ? "yes" : "no");

    int seen = 0;
    for (const Record& x : r)
        if (x.seq >= 1 && x.seq <= 3 && x.end >= x.start) seen |= 1 << (x.seq - 1);
    if (seen != 7) return fail("not all three kernels ran");
    if (!k3_after_k1) return fail("k_3 started before k_1 finished in the same stream");
    if (legacy && !nonblocking && !(k2_after_k1 && k3_after_k2))
        return fail("the legacy default stream did not serialize k_2 between k_1 and k_3");
    return 0;
}
