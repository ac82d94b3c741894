// Not from a seed document: the traps of issue 19, one per mode, for the split of a call's host time into the time
// it WAITED for GPU work in its documented scope and its OWN cost. Each mode sets one trap and prints the program's
// own clock of the call under test (std::chrono::steady_clock around it) as one stdout line
//   CLOCK <mode> <label> <microseconds>
// (the GPU test compares bare and checked stdout with every number replaced, so the line is comparable).
//
//   free_during_kernel          cudaFree of an unrelated buffer while a 5 ms spin runs: waits for the device
//   first_launch_busy           a 20 ms spin on one stream, then the FIRST launch of another kernel on another
//                               stream (lazy loading, the default): loading it waits for the spin
//   first_launch_idle           the first launch of a kernel with nothing in flight: only its own (module load) cost
//   malloc_idle                 a 256 MiB cudaMalloc with nothing in flight: only its own cost
//   stream_sync_after_launches  60000 short kernels (10 us each) on a stream, then cudaStreamSynchronize: the
//                               GPU is slower than the launches, so the synchronization waits for the queued tail
//   many_small_syncs            200 x (a 70 us kernel, cudaDeviceSynchronize): each waits < 100 us, ~14 ms in all
//   graph_pageable_node         a graph of a 1 ms spin and a device-to-host copy into a pageable stack variable
//                               (captured cudaMemcpyAsync), launched 20 times, each followed by a synchronization
//
// The spins read the GPU's global nanosecond timer (%globaltimer), so their duration does not depend on the SM
// clock. Every kernel but the one under test is loaded before the trap (cudaFuncGetAttributes), so that no other
// call is a first launch under lazy loading; the two first launches load modules (translation units) of their own.
// usage: traps MODE
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t err_ = (call);                                                                   \
        if (err_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

using Clock = std::chrono::steady_clock;

__device__ unsigned long long gpu_now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// One thread busy for ns nanoseconds of GPU time.
__global__ void spin(unsigned long long ns) {
    const unsigned long long start = gpu_now_ns();
    while (gpu_now_ns() - start < ns) {
    }
}

// Launched for the first time by first_launch_busy / first_launch_idle, each defined in a file of its own
// (first_busy.cu, first_idle.cu), so each is a module of its own that no other call has loaded.
__global__ void first_busy(int* out);
__global__ void first_idle(int* out);

__global__ void set_value(int* out, int v) { *out = v; }

static void clock_line(const char* mode, const char* label, Clock::time_point t0) {
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    std::printf("CLOCK %s %s %.1f\n", mode, label, us);
}

static void load_kernels() {
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, spin));
    CHECK(cudaFuncGetAttributes(&attr, set_value));
}

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        std::fprintf(stderr, "usage: traps MODE [LAUNCHES]\n");
        return 2;
    }
    const char* mode = argv[1];
    CHECK(cudaFree(0));  // the context
    Clock::time_point t0;

    if (std::strcmp(mode, "free_during_kernel") == 0) {
        load_kernels();
        void* unrelated = nullptr;
        CHECK(cudaMalloc(&unrelated, 64 << 20));
        CHECK(cudaDeviceSynchronize());
        spin<<<1, 1>>>(5'000'000);  // 5 ms
        t0 = Clock::now();
        CHECK(cudaFree(unrelated));  // waits for the spin: nothing it frees is used by it
        clock_line(mode, "cudaFree", t0);
        CHECK(cudaDeviceSynchronize());
    } else if (std::strcmp(mode, "first_launch_busy") == 0) {
        load_kernels();
        int* out = nullptr;
        cudaStream_t a, b;
        CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
        CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
        CHECK(cudaMalloc(&out, sizeof(int)));
        CHECK(cudaDeviceSynchronize());
        spin<<<1, 1, 0, a>>>(20'000'000);  // 20 ms on stream a
        t0 = Clock::now();
        first_busy<<<1, 1, 0, b>>>(out);  // first launch, on stream b: its loading waits for the spin
        clock_line(mode, "first_launch", t0);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
    } else if (std::strcmp(mode, "first_launch_idle") == 0) {
        load_kernels();
        int* out = nullptr;
        CHECK(cudaMalloc(&out, sizeof(int)));
        CHECK(cudaDeviceSynchronize());
        t0 = Clock::now();
        first_idle<<<1, 1>>>(out);  // first launch, nothing in flight: the module load only
        clock_line(mode, "first_launch", t0);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
    } else if (std::strcmp(mode, "malloc_idle") == 0) {
        void* small = nullptr;
        void* big = nullptr;
        CHECK(cudaMalloc(&small, 1 << 20));  // the process's first allocation, out of the way
        CHECK(cudaDeviceSynchronize());
        t0 = Clock::now();
        CHECK(cudaMalloc(&big, 256u << 20));  // 256 MiB, nothing in flight
        clock_line(mode, "cudaMalloc", t0);
        CHECK(cudaFree(big));
        CHECK(cudaFree(small));
    } else if (std::strcmp(mode, "stream_sync_after_launches") == 0) {
        load_kernels(); const int launches = argc > 2 ? std::atoi(argv[2]) : 60000;  // the recording: 20000
        cudaStream_t s;
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CHECK(cudaDeviceSynchronize());
        for (int i = 0; i < launches; ++i) {
            spin<<<1, 1, 0, s>>>(10'000);  // 10 us each: longer than a launch, so the queue fills
        }
        CHECK(cudaGetLastError());
        t0 = Clock::now();
        CHECK(cudaStreamSynchronize(s));  // waits for the kernels still queued
        clock_line(mode, "cudaStreamSynchronize", t0);
    } else if (std::strcmp(mode, "many_small_syncs") == 0) {
        load_kernels();
        CHECK(cudaDeviceSynchronize());
        double total_us = 0;
        for (int i = 0; i < 200; ++i) {
            spin<<<1, 1>>>(70'000);  // 70 us
            t0 = Clock::now();
            CHECK(cudaDeviceSynchronize());  // waits < 100 us each time
            total_us += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        }
        std::printf("CLOCK %s cudaDeviceSynchronize_total %.1f\n", mode, total_us);
    } else if (std::strcmp(mode, "graph_pageable_node") == 0) {
        load_kernels();
        int value = 0;  // pageable: on this stack
        int* d_value = nullptr;
        cudaStream_t s;
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CHECK(cudaMalloc(&d_value, sizeof(int)));
        CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        spin<<<1, 1, 0, s>>>(1'000'000);  // 1 ms, recorded
        set_value<<<1, 1, 0, s>>>(d_value, 42);
        CHECK(cudaMemcpyAsync(&value, d_value, sizeof(int), cudaMemcpyDeviceToHost, s));  // memcpy node, pageable
        CHECK(cudaStreamEndCapture(s, &graph));
        CHECK(cudaGraphInstantiate(&exec, graph, 0));
        double launch_us = 0, sync_us = 0;
        for (int i = 0; i < 20; ++i) {
            value = 0;
            t0 = Clock::now();
            CHECK(cudaGraphLaunch(exec, s));
            launch_us += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
            t0 = Clock::now();
            CHECK(cudaStreamSynchronize(s));
            sync_us += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
            if (value != 42) {
                std::printf("graph launch %d: MISMATCH: %d, expected 42\n", i, value);
                return 1;
            }
        }
        std::printf("CLOCK %s cudaGraphLaunch_total %.1f\n", mode, launch_us);
        std::printf("CLOCK %s cudaStreamSynchronize_total %.1f\n", mode, sync_us);
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(graph));
    } else if (std::strcmp(mode, "managed_sync") == 0) {
        load_kernels();
        const size_t bytes = 256u << 20;
        char* managed = nullptr;
        cudaStream_t s;
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        CHECK(cudaMallocManaged(&managed, bytes));
        std::memset(managed, 1, bytes);  // its pages on the host
        // A kernel (managed_touch.cu) that adds 1 to every byte: each page it touches migrates to the device on
        // a GPU page fault while it runs (no watched call enqueues the migrations).
        void launch_touch(char* p, size_t n, cudaStream_t stream);
        launch_touch(managed, bytes, s);
        CHECK(cudaGetLastError());
        // The synchronization below waits for the kernel, and with it for every page it faulted in: CUPTI reports
        // those migrations through its unified-memory counters where it can count them (cupti/activity.cpp), and
        // the evidence then names the last one that ended.
        t0 = Clock::now();
        CHECK(cudaDeviceSynchronize());  // waits for the kernel and the migrations it caused
        clock_line(mode, "cudaDeviceSynchronize", t0);
        CHECK(cudaFree(managed));
    } else {
        std::fprintf(stderr, "traps: unknown mode '%s'\n", mode);
        return 2;
    }
    std::printf("%s: done\n", mode);
    return 0;
}
