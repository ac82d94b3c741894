// Source: seed 000, the answer's program (StackOverflow, "Why do cudaMemcpyAsync and kernel launches
// block even with an asynchronous stream?"). It times each cudaMemcpyAsync enqueue with
// CLOCK_PROCESS_CPUTIME_ID, from a pageable (malloc) or pinned (cudaMallocHost) 2 GiB buffer.
// Changes, and why:
// - Restored what the extraction lost: the closing braces, the first line of the cudaStreamAddCallback
//   call and the cudaStreamSynchronize(stream) between the two prints.
// - Command line "seed000_answer [pageable|pinned] [bytes]" instead of "any argument means pinned", so
//   that tests can name the mode and run small; defaults are the document's (pageable, 2 GiB).
// - Each "Elapsed:" line also gives the wall time (CLOCK_MONOTONIC) of the enqueue: process CPU time
//   misses time spent sleeping in the driver, and asynccheck's measured blocked time is wall time.
// - Added the includes for clock_gettime and malloc (the document relied on <iostream> pulling them in).
// - Self-check (not in the document): pattern round trip, callback flag after the sync, no CUDA error.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>

using clock_value_t = long long;

__device__ void gpu_sleep(clock_value_t sleep_cycles) {
    clock_value_t start = clock64();
    clock_value_t cycles_elapsed;
    do { cycles_elapsed = clock64() - start; }
    while (cycles_elapsed < sleep_cycles);
}

void callback(cudaStream_t, cudaError_t, void *ptr) {
    *(reinterpret_cast<bool *>(ptr)) = true;
}

__global__ void dummy(clock_value_t sleep_cycles) { gpu_sleep(sleep_cycles); }

static double seconds(const timespec& a, const timespec& b) {
    return (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
}

static int usage() {
    std::fprintf(stderr, "usage: seed000_answer [pageable|pinned] [bytes]\n");
    return 2;
}

int main(int argc, char* argv[]) {
    struct timespec start, stop, wall_start, wall_stop;
    const clock_value_t duration_in_clocks = 1e6;
    size_t buffer_size = 2 * 1024 * 1024 * (size_t)1024;
    bool pinned = false;
    if (argc > 3) return usage();
    if (argc > 1) {
        if (std::strcmp(argv[1], "pinned") == 0) pinned = true;
        else if (std::strcmp(argv[1], "pageable") != 0) return usage();
    }
    if (argc > 2) {
        char* end;
        buffer_size = std::strtoull(argv[2], &end, 10);
        if (*end != '\0' || buffer_size == 0) return usage();
    }
    bool callback_executed = false;
    cudaStream_t stream;
    void* host_ptr = nullptr;
    if (!pinned){
        host_ptr = malloc(buffer_size);
    }
    else {
        cudaMallocHost(&host_ptr, buffer_size, 0);
    }
    if (host_ptr == nullptr) {
        std::fprintf(stderr, "seed000_answer: cannot allocate %zu host bytes\n", buffer_size);
        return 1;
    }
    char* pattern = static_cast<char*>(host_ptr);
    for (size_t i = 0; i < buffer_size; ++i) pattern[i] = static_cast<char>(i * 7 + 3);
    char* device_ptr;
    cudaMalloc(&device_ptr, buffer_size);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    clock_gettime(CLOCK_MONOTONIC, &wall_start);
    cudaMemcpyAsync(device_ptr, host_ptr, buffer_size, cudaMemcpyDefault, stream);
    clock_gettime(CLOCK_MONOTONIC, &wall_stop);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &stop);
    double result = (stop.tv_sec - start.tv_sec) * 1e6 + (stop.tv_nsec - start.tv_nsec) / 1e3;
    std::cout << "Elapsed: " << result / 1000 / 1000
        << " (wall " << seconds(wall_start, wall_stop) << " s)" << std::endl;
    dummy<<<128, 128, 0, stream>>>(duration_in_clocks);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    clock_gettime(CLOCK_MONOTONIC, &wall_start);
    cudaMemcpyAsync(host_ptr, device_ptr, buffer_size, cudaMemcpyDefault, stream);
    clock_gettime(CLOCK_MONOTONIC, &wall_stop);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &stop);
    result = (stop.tv_sec - start.tv_sec) * 1e6 + (stop.tv_nsec - start.tv_nsec) / 1e3;
    std::cout << "Elapsed: " << result / 1000 / 1000
        << " (wall " << seconds(wall_start, wall_stop) << " s)" << std::endl;
    cudaStreamAddCallback(
        stream, callback, &callback_executed, 0 /* fixed and meaningless */);
    auto snapshot = callback_executed;
    std::cout << "Right after we finished enqueuing work, the stream has "
        << (snapshot ? "" : "not ") << "concluded execution." << std::endl;
    cudaStreamSynchronize(stream);
    snapshot = callback_executed;
    std::cout << "After cudaStreamSynchronize, the stream has "
        << (snapshot ? "" : "not ") << "concluded execution." << std::endl;

    // Self-check.
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        std::fprintf(stderr, "seed000_answer: CUDA error: %s\n", cudaGetErrorString(err));
        return 1;
    }
    if (!snapshot) {
        std::fprintf(stderr, "seed000_answer: callback had not run after cudaStreamSynchronize\n");
        return 1;
    }
    for (size_t i = 0; i < buffer_size; ++i) {
        if (pattern[i] != static_cast<char>(i * 7 + 3)) {
            std::fprintf(stderr, "seed000_answer: round trip wrong at byte %zu\n", i);
            return 1;
        }
    }
    return 0;
}
