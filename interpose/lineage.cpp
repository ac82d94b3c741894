#include "interpose/lineage.h"

#include <fstream>
#include <string>

namespace asynccheck::lineage {

bool maps_hold_library(std::string_view maps) { return maps_hold(maps, "libasynccheck"); }

bool maps_hold(std::string_view maps, std::string_view prefix) {
  // Each line: address perms offset dev inode [path]; the path is the rest of the line after the inode.
  size_t at = 0;
  while (at < maps.size()) {
    size_t end = maps.find('\n', at);
    if (end == std::string_view::npos) end = maps.size();
    const std::string_view line = maps.substr(at, end - at);
    at = end + 1;
    const size_t slash = line.rfind('/');
    if (slash == std::string_view::npos) continue;  // anonymous, [heap], [stack]...
    if (line.substr(slash + 1).starts_with(prefix)) return true;
  }
  return false;
}

bool cuda_driver_loaded() {
  std::ifstream in("/proc/self/maps");
  for (std::string line; std::getline(in, line);) {
    if (maps_hold(line, "libcuda.so")) return true;
  }
  return false;
}

bool process_has_library(pid_t pid) {
  // Line by line, up to the first match: a parent's maps can be megabytes, and this runs before the child's main.
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(in, line);) {
    if (maps_hold_library(line)) return true;
  }
  return false;
}

}  // namespace asynccheck::lineage
