// Call stacks of the calls that matter, captured with libunwind and interned so each distinct stack is stored
// once. Only raw return addresses are kept in the process; symbolization happens at report time.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/events.h"

namespace asynccheck {

// Captures the calling thread's stack (skipping `skip` innermost frames), with its Python frames when the call
// was made from Python code (python_frames.h: with the GIL held, or released on a version with a verified
// layout), and returns its interned id (>= 1), or 0 if unwinding failed and there were no Python frames.
uint32_t capture_stack(int skip);

// The interned stacks from index `first` on (id N at index N - 1 - first); empty if the lock could not be taken in
// time (lock_within.h).
std::vector<Stack> interned_stacks(size_t first = 0);

}  // namespace asynccheck
