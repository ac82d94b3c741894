#include "analysis/kernel_name.h"

#include <cstdint>
#include <mutex>
#include <ostream>
#include <unordered_set>

#include "common/string_hash.h"

namespace asynccheck {

namespace {

// Never destroyed: operations may be read by threads still running at exit (the capture's), after static
// destructors.
struct Table {
  std::mutex mu;
  std::unordered_set<std::string, StringViewHash, std::equal_to<>> names;
};
Table& table() {
  static Table* t = new Table;
  return *t;
}

}  // namespace

const std::string& KernelName::none() {
  static const std::string* e = new std::string;  // never destroyed, as the table
  return *e;
}

KernelName::KernelName(std::string_view name) {
  if (name.empty()) return;
  // The decoding thread meets the same few kernels record after record (a training step's dozens, in turn): a small
  // cache per thread, by where the text lies (CUPTI hands the same pointer for a function's records) and checked by
  // content (that memory may hold another name later), spares it the lock and the hash.
  struct Cached {
    const char* text = nullptr;
    const std::string* name = nullptr;
  };
  thread_local Cached cache[16];  // in every thread of the program (the library's TLS): small
  Cached& slot = cache[(reinterpret_cast<uintptr_t>(name.data()) >> 4) % 16];
  if (slot.text == name.data() && std::string_view(*slot.name) == name) {
    name_ = slot.name;
    return;
  }
  Table& t = table();
  {
    std::lock_guard lock(t.mu);
    auto it = t.names.find(name);
    if (it == t.names.end()) it = t.names.emplace(name).first;
    name_ = &*it;
  }
  slot = {name.data(), name_};
}

std::ostream& operator<<(std::ostream& os, const KernelName& name) { return os << '"' << name.str() << '"'; }

}  // namespace asynccheck
