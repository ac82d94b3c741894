// Source: seed 000, the question's program ("Why do cudaMemcpyAsync and kernel launches block even
// with an asynchronous stream?", StackOverflow). It enqueues H2D copy, sleep kernel, D2H copy and a
// callback on a cudaStreamNonBlocking stream from a 10 MB pageable buffer; both copies block the host.
// Changes, and why:
// - Restored what the extraction lost: the closing braces, the first line of the cudaStreamAddCallback
//   call, "auto snapshot", and the cudaStreamSynchronize(stream) between the two prints.
// - Added #include <memory> (std::unique_ptr) and <cstdio>.
// - Self-check (not in the document): the buffer is filled with a pattern before the copies and must
//   hold it again after the round trip; the callback flag must be set after the sync; no CUDA error.
#include <cstdio>
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

static char pattern(size_t i) { return static_cast<char>(i * 7 + 3); }

int main() {
    const clock_value_t duration_in_clocks = 1e6;
    const size_t buffer_size = 1e7;
    bool callback_executed = false;
    cudaStream_t stream;
    auto host_ptr = std::unique_ptr<char[]>(new char[buffer_size]);
    for (size_t i = 0; i < buffer_size; ++i) host_ptr[i] = pattern(i);
    char* device_ptr;
    cudaMalloc(&device_ptr, buffer_size);
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaMemcpyAsync(device_ptr, host_ptr.get(), buffer_size, cudaMemcpyDefault, stream);
    dummy<<<128, 128, 0, stream>>>(duration_in_clocks);
    cudaMemcpyAsync(host_ptr.get(), device_ptr, buffer_size, cudaMemcpyDefault, stream);
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
        std::fprintf(stderr, "seed000_question: CUDA error: %s\n", cudaGetErrorString(err));
        return 1;
    }
    if (!snapshot) {
        std::fprintf(stderr, "seed000_question: callback had not run after cudaStreamSynchronize\n");
        return 1;
    }
    for (size_t i = 0; i < buffer_size; ++i) {
        if (host_ptr[i] != pattern(i)) {
            std::fprintf(stderr, "seed000_question: round trip wrong at byte %zu\n", i);
            return 1;
        }
    }
    return 0;
}
