#include "cli/program.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace asynccheck::cli {
namespace {

NotRunnable cannot_run(const std::string& name, int code, const std::string& why) {
  return NotRunnable{code, "cannot run '" + name + "': " + why};
}

// A file found (by path or in PATH): why it cannot be run, if it cannot.
std::optional<NotRunnable> check_file(const std::string& name, const std::string& file) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) {
    const int err = errno;
    return cannot_run(name, exec_failure_code(err), std::strerror(err));
  }
  if (S_ISDIR(st.st_mode))
    return cannot_run(name, kCannotExecuteExitCode, "Is a directory (valid: an executable file)");
  if (access(file.c_str(), X_OK) != 0) {
    return cannot_run(
        name, kCannotExecuteExitCode,
        std::string(std::strerror(errno)) + " (it is not executable by you: chmod +x, or run its interpreter)");
  }
  return std::nullopt;
}

}  // namespace

int exec_failure_code(int err) { return err == ENOENT ? kNotFoundExitCode : kCannotExecuteExitCode; }

std::optional<NotRunnable> check_program(const std::string& name, const char* path) {
  if (name.empty()) return cannot_run(name, kNotFoundExitCode, "command not found");
  if (name.find('/') != std::string::npos) return check_file(name, name);
  // As execvp searches: each directory of PATH in order (an empty one is the current directory); the first
  // executable regular file wins. A file found but not executable is remembered, as a shell reports it (126).
  std::string_view dirs = path ? path : "/bin:/usr/bin";
  std::optional<NotRunnable> found_unrunnable;
  for (;;) {
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    const std::string file = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + name;
    struct stat st {};
    if (stat(file.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      std::optional<NotRunnable> why = check_file(name, file);
      if (!why) return std::nullopt;
      if (!found_unrunnable) found_unrunnable = why;
    }
    if (colon == std::string_view::npos) break;
    dirs = dirs.substr(colon + 1);
  }
  if (found_unrunnable) return found_unrunnable;
  return cannot_run(name, kNotFoundExitCode, "command not found (no such program in any directory of PATH)");
}

}  // namespace asynccheck::cli
