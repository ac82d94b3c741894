// The states of RunInfo::monitoring, one place for every reader and writer of reports and recordings:
//   "on"            watched from the start to the end;
//   "off: WHY"      never started (no GPU or driver, CUPTI held by another tool, a bad option): nothing was watched;
//   "stopped: WHY"  started, then stopped before the program ended (another CUPTI client finalized CUPTI or turned
//                   our callbacks off, CUPTI failed): the findings made before are kept, nothing after was watched.
// Both of the last fail a CI run under require_monitoring and make SARIF's executionSuccessful false.
#pragma once

#include <string>
#include <string_view>

namespace asynccheck {

inline constexpr std::string_view kMonitoringOn = "on";
inline constexpr std::string_view kMonitoringOffPrefix = "off: ";
inline constexpr std::string_view kMonitoringStoppedPrefix = "stopped: ";

inline bool monitoring_stopped(std::string_view m) { return m.starts_with(kMonitoringStoppedPrefix); }
// Anything but "on" or "stopped: ..." reads as off: nothing was watched (the conservative reading).
inline bool monitoring_off(std::string_view m) { return m != kMonitoringOn && !monitoring_stopped(m); }
// Whether the run was watched from start to end.
inline bool monitoring_whole(std::string_view m) { return m == kMonitoringOn; }

// Whether `m` is one of the three forms, with a reason after the prefix: what a reader accepts.
inline bool known_monitoring(std::string_view m) {
  for (std::string_view prefix : {kMonitoringOffPrefix, kMonitoringStoppedPrefix}) {
    if (m.starts_with(prefix)) return m.size() > prefix.size();
  }
  return m == kMonitoringOn;
}

// What a reader says of a value that is not one of them.
inline std::string monitoring_error(std::string_view m) {
  return "'" + std::string(m) + "' is not a monitoring state (valid: on, off: WHY, stopped: WHY)";
}

}  // namespace asynccheck
