// A kernel's name as GPU operations carry it: interned once per process, so an operation holds a pointer rather
// than a string. A flood's backlog and window hold hundreds of thousands of operations, and a mangled name is rarely
// short enough for std::string's inline buffer (a PyTorch kernel's runs to hundreds of bytes): a string each was an
// allocation per activity record on the decoding thread, freed on the analyzing one, and a copy at every merge.
// The table only grows, by the distinct names met (the program's kernels, or a recording's: its size is limited);
// its strings never move, so reading a name needs no lock.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace asynccheck {

class KernelName {
 public:
  KernelName() = default;
  // Interns `name` (the empty name is no name). Implicit, so that `op.name = "..."` reads as for a string.
  KernelName(std::string_view name);  // NOLINT(google-explicit-constructor)
  KernelName(const char* name) : KernelName(std::string_view(name ? name : "")) {}  // NOLINT
  KernelName(const std::string& name) : KernelName(std::string_view(name)) {}       // NOLINT

  const std::string& str() const { return name_ ? *name_ : none(); }
  bool empty() const { return name_ == nullptr; }
  void clear() { name_ = nullptr; }
  // One string per name: equal names are the same pointer.
  bool operator==(const KernelName& o) const { return name_ == o.name_; }
  size_t hash() const { return std::hash<const void*>()(name_); }

 private:
  const std::string* name_ = nullptr;
  static const std::string& none();
};

// As the name, quoted (test failures print it).
std::ostream& operator<<(std::ostream& os, const KernelName& name);

}  // namespace asynccheck

template <>
struct std::hash<asynccheck::KernelName> {
  size_t operator()(const asynccheck::KernelName& n) const { return n.hash(); }
};
