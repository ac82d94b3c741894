// A thread-local's address, computed once where it is called. A shared library reaches its thread-locals through
// __tls_get_addr (the dynamic TLS model, which a library loaded by dlopen, as CUDA's injection does, needs), and GCC
// takes that address for a constant it may compute again at every use: a call each time, on paths that run on every
// CUDA call. Hidden from the optimizer, the address is kept in a register instead.
#pragma once

namespace asynccheck {

template <typename T>
T& thread_local_address(T& variable) {
  T* address = &variable;
  asm("" : "+r"(address));
  return *address;
}

}  // namespace asynccheck
