#include "report/source_root.h"

#include <filesystem>
#include <system_error>

#include "report/report.h"

namespace asynccheck::report {

std::string normalized_root(const std::string& source_root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path root = source_root.empty() ? fs::current_path(ec) : fs::path(source_root);
  if (ec) root = "/";
  if (root.is_relative()) root = fs::current_path(ec) / root;
  std::string s = root.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::optional<std::string> under_root(const std::string& path, const std::string& root) {
  if (root == "/") return path.size() > 1 && path[0] == '/' ? std::optional(path.substr(1)) : std::nullopt;
  if (path.size() > root.size() + 1 && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/') {
    return path.substr(root.size() + 1);
  }
  return std::nullopt;
}

void set_source_root(ReportData& data, const std::string& option) {
  if (!option.empty()) data.source_root = data.shown_root = normalized_root(option);
}

std::string shown_file(const std::string& file, const std::string& root) {
  if (root.empty() || file.empty() || file[0] != '/') return file;
  const std::string normal = std::filesystem::path(file).lexically_normal().string();
  if (auto rel = under_root(normal, root)) return *rel;
  return file;
}

}  // namespace asynccheck::report
