// exit_paths with CUDA work in flight, for the GPU machine (test_cuda_exit_paths.cpp): the report must be written,
// with the calls watched so far, when the program is killed inside a CUDA call, crashes after some, leaves with
// _exit, calls exit() from a thread while another still makes CUDA calls, or forks a child that execs another CUDA
// program. Plain C++ on the runtime API (no
// kernels, no nvcc): a host function enqueued on a stream makes a synchronization that lasts as long as we like.
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
    pid_t pid = fork();
    if (pid == 0) std::exit(0);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    some_work(s, host, dev);
    return 0;
  }
  if (mode == "fork-exec-cuda") {  // the child execs another CUDA program (this one, mode "exit"), then more work
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], "exit", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 3) return 1;
    some_work(s, host, dev);  // the parent's calls after its child ended are in the parent's report
    return 0;
  }
  if (mode == "fork-exec-nocuda") {  // the child execs a program that never uses CUDA
    pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    some_work(s, host, dev);
    return 0;
  }
  std::fprintf(stderr, "cuda_exit_paths: unknown mode '%s'\n", argv[1]);
  return 2;
}
