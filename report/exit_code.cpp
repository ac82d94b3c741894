#include "report/exit_code.h"

#include <unistd.h>

namespace asynccheck::report {

int requested_exit_code(const Options& o, const Emitted& e) {
  static_assert(kMonitoringOffExitCode == 4, "kMonitoringRequiredLine names the code");
  // Monitoring off found nothing, and stopped found nothing after it stopped: "no findings" must not pass for
  // "checked and clean".
  if (o.require_monitoring && (e.monitoring_off || e.monitoring_stopped || e.range_never_entered)) {
    // One write(2): the line shares stderr with the program's.
    const std::string_view line = e.monitoring_off       ? kMonitoringRequiredLine
                                  : e.monitoring_stopped ? kStoppedRequiredLine
                                                         : kRangeRequiredLine;
    const ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
    (void)ignored;
    return kMonitoringOffExitCode;
  }
  if (o.error_exitcode >= 0 && e.worst_new != rules::Level::None && e.worst_new >= o.fail_on) return o.error_exitcode;
  return -1;
}

}  // namespace asynccheck::report
