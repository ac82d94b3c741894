// The process' memory as /proc tells it, for the benchmarks that run without a GPU (compactor_replay, flood_feed).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace asynccheck::bench {

// A "Name:  N kB" field of /proc/self/status (VmRSS:, VmHWM:), in KiB; 0 when it is not there.
inline long status_kb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::strtol(line.c_str() + std::strlen(field), nullptr, 10);
  }
  return 0;
}

// The resident size now, in KiB (/proc/self/statm: cheaper to read than status, for sampling).
inline long rss_kb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace asynccheck::bench
