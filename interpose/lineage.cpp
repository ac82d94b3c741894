#include "interpose/lineage.h"

#include <fstream>
#include <sstream>
#include <string>

namespace asynccheck::lineage {

bool maps_hold_library(std::string_view maps) {
  // Each line: address perms offset dev inode [path]; the path is the rest of the line after the inode.
  size_t at = 0;
  while (at < maps.size()) {
    size_t end = maps.find('\n', at);
    if (end == std::string_view::npos) end = maps.size();
    const std::string_view line = maps.substr(at, end - at);
    at = end + 1;
    const size_t slash = line.rfind('/');
    if (slash == std::string_view::npos) continue;  // anonymous, [heap], [stack]...
    if (line.substr(slash + 1).starts_with("libasynccheck")) return true;
  }
  return false;
}

bool process_has_library(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  return maps_hold_library(text.str());
}

bool used_cuda(const EventLog& log) {
  if (!log.calls.empty() || !log.ops.empty() || log.carried.calls != 0 || log.carried.ops != 0 ||
      log.run.unanalyzed_calls != 0) {
    return true;
  }
  for (const Mark& m : log.marks) {
    if (m.kind == MarkKind::ContextCreated) return true;
  }
  return false;
}

}  // namespace asynccheck::lineage
