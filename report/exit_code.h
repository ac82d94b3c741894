// The exit codes asynccheck gives of its own, besides the program's, in one place: the command (cli/) and the
// library in raw LD_PRELOAD use (interpose/core.cpp) decide them the same way. Documented in README.md ("Use") and
// docs/robustness.md ("Exit codes").
#pragma once

#include <string_view>

#include "options/options.h"
#include "report/report.h"

namespace asynccheck::report {

inline constexpr int kWriteFailedExitCode = 1;  // a report file could not be written (the program exited 0)
inline constexpr int kUsageExitCode = 2;        // a bad option or input file: the program did not run
inline constexpr int kMonitoringOffExitCode =
    4;  // require_monitoring, and monitoring (or the capture range) never started, or stopped before the end

// The code the options ask for after a report: kMonitoringOffExitCode when require_monitoring is set and
// monitoring was off or stopped before the end, or a capture range never opened; error_exitcode when a site at or
// above fail_on is not in the baseline; else -1 (the program's own code, or 0). Says the line of its cause on stderr
// when it asks for kMonitoringOffExitCode.
int requested_exit_code(const Options& options, const Emitted& emitted);

// The lines said when require_monitoring sets the exit code, so that the code does not come unexplained.
inline constexpr std::string_view kMonitoringRequiredLine =
    "asynccheck: ERROR: monitoring was off and require_monitoring is set: exit code 4 (nothing was checked)\n";
inline constexpr std::string_view kStoppedRequiredLine =
    "asynccheck: ERROR: monitoring stopped before the program ended and require_monitoring is set: exit code 4 (the "
    "rest of the run was not checked)\n";
inline constexpr std::string_view kRangeRequiredLine =
    "asynccheck: ERROR: no call was made inside the capture range and require_monitoring is set: exit code 4 "
    "(nothing was checked)\n";

}  // namespace asynccheck::report
