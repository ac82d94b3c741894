// Our code called from a C library's frames (CUPTI's callbacks, on the program's threads) must not throw through
// them: no C frame can be unwound, and the program would end in std::terminate. What can throw there is our own
// allocation running out of memory (a thread's buffer, a stack, a set of kernels).
#pragma once

#include <cxxabi.h>

#include <atomic>
#include <cstdint>
#include <utility>

namespace asynccheck {

// Runs `f`; an exception it throws goes no further and is counted in `failures`. A thread's cancellation goes on:
// glibc unwinds a cancelled thread with an exception of its own, which must reach the thread's start.
template <typename F>
void run_caught(std::atomic<uint64_t>& failures, F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const abi::__forced_unwind&) {
    throw;
  } catch (...) {
    failures.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace asynccheck
