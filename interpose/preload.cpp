// Entry shim for LD_PRELOAD=libasynccheck.so: start the core before main().
#include "interpose/core.h"

__attribute__((constructor)) static void asynccheck_preload() {
  asynccheck::core::start(asynccheck::core::Origin::Preload);
}
