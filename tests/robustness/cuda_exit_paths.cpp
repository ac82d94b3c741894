// exit_paths with CUDA work in flight, for the GPU machine (test_cuda_exit_paths.cpp): the report must be written,
// with the calls watched so far, when the program is killed inside a CUDA call, crashes after some, leaves with
// _exit, calls exit() from a thread while another still makes CUDA calls, or forks a child that execs another
// program (CUDA or not). Plain C++ on the runtime API (no kernels, no nvcc): a host function enqueued on a stream
// makes a synchronization that lasts as long as we like.
// Without a GPU every mode exits with 77 before doing anything.
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

namespace {

void say_err(const char* line) {
  ssize_t ignored = write(STDERR_FILENO, line, std::strlen(line));
  (void)ignored;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cuda_exit_paths: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(70);
  }
}

// A little of everything asynccheck watches: an allocation, a pageable async copy (a finding), a synchronization.
void some_work(cudaStream_t s, std::vector<char>& host, void* dev) {
  check(cudaMemcpyAsync(dev, host.data(), host.size(), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

// Whether the child `pid` (fork's answer) exited with `code`.
bool child_exited_with(pid_t pid, int code) {
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

// Forks a child that execs `path` as `argv0` with `arg` (none if null), waits for it to exit with `code`, then works
// again: the parent's calls after its child ended are in the parent's report.
int fork_exec_then_work(const char* path, const char* argv0, const char* arg, int code, cudaStream_t s,
                        std::vector<char>& host, void* dev) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl(path, argv0, arg, static_cast<char*>(nullptr));
    _exit(127);
  }
  if (!child_exited_with(pid, code)) return 1;
  some_work(s, host, dev);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cuda_exit_paths MODE\n");
    return 2;
  }
  const std::string_view mode = argv[1];
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;  // no GPU
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<char> host(64 << 20, 1);
  void* dev = nullptr;
  check(cudaMalloc(&dev, host.size()), "cudaMalloc");
  some_work(s, host, dev);
  if (mode == "sigterm-in-sync") {  // the test sends SIGTERM while the host waits in cudaStreamSynchronize
    // Runs on CUDA's own thread once the stream reaches it; half a second later the main thread is surely inside
    // cudaStreamSynchronize.
    auto hold = [](void*) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      say_err("ready\n");
      std::this_thread::sleep_for(std::chrono::seconds(20));
    };
    check(cudaLaunchHostFunc(s, hold, nullptr), "cudaLaunchHostFunc");
    cudaStreamSynchronize(s);
    return 1;  // not reached: killed
  }
  if (mode == "segv") *static_cast<volatile int*>(nullptr) = 1;
  if (mode == "abort") std::abort();
  if (mode == "_exit") _exit(4);
  if (mode == "exit") std::exit(3);
  if (mode == "thread-exit") {  // exit() from a second thread while main keeps making CUDA calls
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::exit(8);
    }).detach();
    for (;;) some_work(s, host, dev);
  }
  if (mode == "fork-child-exits") {  // the child neither execs nor uses CUDA
    const pid_t pid = fork();
    if (pid == 0) std::exit(0);
    if (!child_exited_with(pid, 0)) return 1;
    some_work(s, host, dev);
    return 0;
  }
  // The child execs another CUDA program (this one, mode "exit": code 3), or one that never uses CUDA.
  if (mode == "fork-exec-cuda") return fork_exec_then_work("/proc/self/exe", argv[0], "exit", 3, s, host, dev);
  if (mode == "fork-exec-nocuda") return fork_exec_then_work("/bin/true", "true", nullptr, 0, s, host, dev);
  std::fprintf(stderr, "cuda_exit_paths: unknown mode '%s'\n", argv[1]);
  return 2;
}
