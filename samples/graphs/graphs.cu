// Not from a seed document: CUDA graphs made by stream capture. While a stream captures (cudaStreamBeginCapture
// ... cudaStreamEndCapture), the work issued to it is recorded into a graph, not executed: a pageable
// cudaMemcpyAsync is not staged, a launch runs nothing. asynccheck must not judge those calls, and must measure the
// graph launches like launches. The same work runs once outside capture first, for contrast: there the two pageable
// copies hold the host (copy-async-pageable-h2d and -d2h).
//
// The work, on a blocking stream `s` with a fork to and a join from a second blocking stream `side`:
//   cudaMemcpyAsync 32 MiB host-to-device from pageable memory, cudaMemsetAsync, a kernel, a fork (event) to
//   `side` and a kernel there, a join back (event), a kernel, cudaMemcpyAsync 32 MiB device-to-host to pageable
//   memory. The capture uses cudaStreamCaptureModeGlobal (the strictest mode: any unsafe call from any thread would
//   be refused while it lasts). The graph is then instantiated and launched LAUNCHES times, each followed by a
//   cudaStreamSynchronize (the real wait) and a check of the data it copied back.
//
// usage: graphs [LAUNCHES]   (default 5)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t err_ = (call);                                                                   \
        if (err_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

__global__ void plus_one(const int* in, int* out, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i] + 1;
}

__global__ void twice(const int* in, int* out, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = 2 * in[i];
}

__global__ void add(const int* a, const int* b, int* out, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] += a[i] + b[i];
}

// out = 0 + (in + 1) + 2 * in: what every run of the work must copy back.
static bool check(const std::vector<int>& in, const std::vector<int>& out, const char* what) {
    for (size_t i = 0; i < in.size(); ++i) {
        if (out[i] != 3 * in[i] + 1) {
            std::printf("%s: MISMATCH at %zu: %d, expected %d\n", what, i, out[i], 3 * in[i] + 1);
            return false;
        }
    }
    std::printf("%s: data ok\n", what);
    return true;
}

static void fill_input(std::vector<int>& in, int round) {
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i % 1000) + round;
}

int main(int argc, char** argv) {
    const int launches = argc > 1 ? std::atoi(argv[1]) : 5;
    const size_t n = 8 << 20, bytes = n * sizeof(int);  // 32 MiB
    std::vector<int> h_in(n), h_out(n);                  // ordinary (pageable) host memory
    int *d_in = nullptr, *d_a = nullptr, *d_b = nullptr, *d_out = nullptr;
    cudaStream_t s, side;
    cudaEvent_t fork, join;
    cudaFuncAttributes attr;
    // Load the kernels now, so that no launch below is a first launch under lazy loading.
    CHECK(cudaFuncGetAttributes(&attr, plus_one));
    CHECK(cudaFuncGetAttributes(&attr, twice));
    CHECK(cudaFuncGetAttributes(&attr, add));
    CHECK(cudaStreamCreate(&s));  // blocking streams: cudaStreamCreate's default
    CHECK(cudaStreamCreate(&side));
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    CHECK(cudaMalloc(&d_in, bytes));
    CHECK(cudaMalloc(&d_a, bytes));
    CHECK(cudaMalloc(&d_b, bytes));
    CHECK(cudaMalloc(&d_out, bytes));
    bool ok = true;

    // Contrast: the work, executed once. The pageable copies hold the host.
    fill_input(h_in, 0);
    CHECK(cudaMemcpyAsync(d_in, h_in.data(), bytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemsetAsync(d_out, 0, bytes, s));
    plus_one<<<256, 256, 0, s>>>(d_in, d_a, n);
    CHECK(cudaEventRecord(fork, s));
    CHECK(cudaStreamWaitEvent(side, fork, 0));
    twice<<<256, 256, 0, side>>>(d_in, d_b, n);
    CHECK(cudaEventRecord(join, side));
    CHECK(cudaStreamWaitEvent(s, join, 0));
    add<<<256, 256, 0, s>>>(d_a, d_b, d_out, n);
    CHECK(cudaMemcpyAsync(h_out.data(), d_out, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    ok = check(h_in, h_out, "outside capture") && ok;

    // The same work, captured into a graph: recorded, not executed (nothing runs, nothing is copied here).
    cudaGraph_t graph;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemcpyAsync(d_in, h_in.data(), bytes, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemsetAsync(d_out, 0, bytes, s));
    plus_one<<<256, 256, 0, s>>>(d_in, d_a, n);
    CHECK(cudaEventRecord(fork, s));
    CHECK(cudaStreamWaitEvent(side, fork, 0));
    twice<<<256, 256, 0, side>>>(d_in, d_b, n);
    CHECK(cudaEventRecord(join, side));
    CHECK(cudaStreamWaitEvent(s, join, 0));
    add<<<256, 256, 0, s>>>(d_a, d_b, d_out, n);
    CHECK(cudaMemcpyAsync(h_out.data(), d_out, bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamEndCapture(s, &graph));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    std::printf("captured a graph of %zu nodes\n", nodes);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));

    // Each launch runs the whole work, reading the host input as it is at launch time.
    for (int k = 1; k <= launches; ++k) {
        fill_input(h_in, k);
        std::memset(h_out.data(), 0, bytes);
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        char what[32];
        std::snprintf(what, sizeof what, "graph launch %d", k);
        ok = check(h_in, h_out, what) && ok;
    }

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaEventDestroy(fork));
    CHECK(cudaEventDestroy(join));
    CHECK(cudaStreamDestroy(side));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    CHECK(cudaFree(d_out));
    return ok ? 0 : 1;
}
