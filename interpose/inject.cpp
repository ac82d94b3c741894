// Entry shim for CUDA_INJECTION64_PATH=libasynccheck.so: the CUDA driver calls InitializeInjection() when the
// program initializes CUDA. Returning 1 tells the driver the injection succeeded (we fail open on our own).
#include "interpose/core.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  asynccheck::core::start(asynccheck::core::Origin::Injection);
  return 1;
}
