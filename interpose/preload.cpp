// Entry shim for LD_PRELOAD=libasynccheck.so: start the core before main(), and see the ends that skip exit
// handlers. Only under LD_PRELOAD do these definitions come before the C library's; loaded by
// CUDA_INJECTION64_PATH (dlopen) they are never called, and those ends go unreported (docs/robustness.md).
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "interpose/core.h"

__attribute__((constructor)) static void asynccheck_preload() {
  asynccheck::core::start(asynccheck::core::Origin::Preload);
}

namespace {

// The C library's _exit is exit_group(2) (then exit(2), should that return); calling the system directly needs
// no lookup of the next definition, which would not be async-signal-safe.
[[noreturn]] void really_exit(int code) {
  for (;;) {
    syscall(SYS_exit_group, code);
    syscall(SYS_exit, code);
  }
}

}  // namespace

// _exit/_Exit skip exit handlers: write the report first (if this process started monitoring; a vfork or fork
// child only compares pids), then exit with the program's code, or the one its options asked for.
extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int code) {
  asynccheck::core::report_before(asynccheck::core::End::UnderscoreExit);
  really_exit(asynccheck::core::exit_code(code));
}

extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int code) noexcept {
  asynccheck::core::report_before(asynccheck::core::End::UpperExit);
  really_exit(asynccheck::core::exit_code(code));
}

// A program that resets a signal to SIG_DFL and sends it to itself (Python after an unhandled KeyboardInterrupt)
// ends without running our handler: report first. Both calls are otherwise exactly the system's.
extern "C" __attribute__((visibility("default"))) int raise(int sig) noexcept {
  asynccheck::core::report_before_signal(sig);
  const long rc =
      syscall(SYS_tgkill, static_cast<long>(getpid()), static_cast<long>(syscall(SYS_gettid)), static_cast<long>(sig));
  return rc == 0 ? 0 : -1;
}

extern "C" __attribute__((visibility("default"))) int kill(pid_t pid, int sig) noexcept {
  if (pid > 0 && pid == getpid()) asynccheck::core::report_before_signal(sig);
  return static_cast<int>(syscall(SYS_kill, static_cast<long>(pid), static_cast<long>(sig)));
}
