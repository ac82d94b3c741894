// The public entry points of include/asynccheck.h: thin shims over interpose/nvtx_ranges.h, exported like the
// injection entry point (everything else in the library is hidden).
#include "include/asynccheck.h"

#include "interpose/nvtx_ranges.h"

extern "C" __attribute__((visibility("default"))) int asynccheck_region_push(const char* name) {
  return asynccheck::nvtx_ranges::region_push(name);
}

extern "C" __attribute__((visibility("default"))) int asynccheck_region_pop(void) {
  return asynccheck::nvtx_ranges::region_pop();
}
