// Where a program faulted, on a machine without a debugger (the GPU machine has no gdb and keeps no core): LD_PRELOAD
// this library before libasynccheck.so. On SIGSEGV, SIGBUS, SIGFPE or SIGILL it writes to stderr
//   FAULT_TRACE sig=11 addr=0x... pc=0x... tid=...
// then the faulting thread's frames (glibc's backtrace_symbols_fd: `module(symbol+0x..)[0x..]`, or `module(+0x..)`
// for a hidden symbol: feed the offset to addr2line with the unstripped build) and the executable mappings of
// /proc/self/maps. The preloaded libraries' constructors run last listed first, so this one's handler replaces
// asynccheck's; it then puts back the action it replaced and returns: the instruction faults again and goes to that
// action (asynccheck's report, then the program's handler or the default end), as it would have without this one.
// Diagnosis only: backtrace() is not async-signal-safe in principle (its first call loads libgcc_s, done here at
// load so that the handler needs nothing new).
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace {

struct sigaction g_previous[NSIG];  // the action each signal had before ours

void put(const char* s) { (void)!write(2, s, strlen(s)); }

void put_hex(uintptr_t v) {
  char buf[2 * sizeof v + 1];  // the digits and their terminator
  char* p = buf + sizeof buf - 1;
  *p = 0;
  do {
    *--p = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  put("0x");
  put(p);
}

void put_dec(long v) {
  char buf[24];
  char* p = buf + sizeof buf - 1;
  *p = 0;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && p > buf);
  put(p);
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
  put("FAULT_TRACE sig=");
  put_dec(sig);
  put(" addr=");
  put_hex(reinterpret_cast<uintptr_t>(info->si_addr));
  put(" pc=");
  put_hex(static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]));
  put(" tid=");
  put_dec(syscall(SYS_gettid));
  put("\n");
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
  const int fd = open("/proc/self/maps", O_RDONLY);
  if (fd >= 0) {
    char buf[4096], line[512];
    size_t len = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        if (len < sizeof line - 1) line[len++] = buf[i];
        if (buf[i] != '\n') continue;
        line[len] = 0;
        if (strstr(line, " r-xp ") != nullptr) put(line);
        len = 0;
      }
    }
    close(fd);
  }
  put("FAULT_TRACE end\n");
  sigaction(sig, &g_previous[sig], nullptr);  // returning runs the instruction again: it faults under that action
}

__attribute__((constructor)) void install() {
  void* warm[4];
  backtrace(warm, 4);  // loads libgcc_s now, not in the handler
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &sa, &g_previous[sig]);
}

}  // namespace
