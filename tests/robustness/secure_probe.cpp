// A program that loads asynccheck itself (dlopen of the path in argv[1]), for test_secure_execution.cpp: run with
// its setgid bit set (secure execution: AT_SECURE), the library must ignore ASYNCCHECK_OPTIONS. Under secure
// execution the dynamic loader ignores an LD_PRELOAD path with a slash, so dlopen is how the library gets in here,
// as it would from a trusted directory. Prints whether this run is secure, so that the test can tell a setgid bit
// that took effect from one the system ignored (a nosuid mount, no_new_privs). Not linked to asynccheck.
#include <dlfcn.h>
#include <sys/auxv.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: secure_probe LIBRARY\n");
    return 2;
  }
  std::printf("secure=%lu\n", getauxval(AT_SECURE));
  std::fflush(stdout);
  if (dlopen(argv[1], RTLD_NOW) == nullptr) {
    std::fprintf(stderr, "secure_probe: dlopen: %s\n", dlerror());
    return 3;
  }
  return 0;
}
