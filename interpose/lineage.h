// Which processes of a watched program write a report (whether a log shows CUDA use: analysis/recording.h). LD_PRELOAD reaches every process the program starts:
// helpers that never touch CUDA (a shell's dirname and sed, compute-sanitizer's launcher, a Python program's
// subprocesses) would each write a report of nothing, and one without %p in its name would take the file the
// program's own report needs. A process that descends from a watched one (its parent has the library mapped) and
// made no CUDA call writes nothing. The first watched process always reports, CUDA or not: it is the program the
// user asked about. A process where monitoring is off reports too: the line saying why is what the user needs
// (under compute-sanitizer the program's CUPTI is taken, and only the program can say so).
#pragma once

#include <string_view>
#include <sys/types.h>

#include "analysis/events.h"

namespace asynccheck::lineage {

// Whether a /proc/PID/maps text maps a copy of libasynccheck (any file whose name starts with "libasynccheck").
bool maps_hold_library(std::string_view maps);
// Whether a line of `maps` maps a file whose name starts with `prefix`.
bool maps_hold(std::string_view maps, std::string_view prefix);
// Whether this process has the CUDA driver library (libcuda.so) mapped: it tried to use CUDA.
bool cuda_driver_loaded();

// Whether process `pid` has asynccheck loaded (false if its maps cannot be read).
bool process_has_library(pid_t pid);

}  // namespace asynccheck::lineage
