// Whether the program to run can be started, found as a shell finds it, and if not the code and words a shell
// gives (bash, dash): 127 for a name not found, 126 for a file that is found but cannot be run.
#pragma once

#include <optional>
#include <string>

namespace asynccheck::cli {

inline constexpr int kNotFoundExitCode = 127;
inline constexpr int kCannotExecuteExitCode = 126;

struct NotRunnable {
  int code = kNotFoundExitCode;
  std::string message;  // "cannot run 'NAME': command not found ..." (without "asynccheck: ERROR: ")
};

// `name` as execvp runs it: a name with '/' is a path; one without is looked for in `path` (PATH's value; unset:
// the C library's default, "/bin:/usr/bin"). Nothing when it can be run.
std::optional<NotRunnable> check_program(const std::string& name, const char* path);

// The code a shell gives when exec fails with `err` (the race where the file changed after check_program).
int exec_failure_code(int err);

}  // namespace asynccheck::cli
