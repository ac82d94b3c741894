// Reading a recording for the command (analyze.cpp), shared with the run subcommand, which reports the
// recordings its program's processes saved.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/events.h"

namespace asynccheck::cli {

// A recording is a regular file of at most this many bytes (a run of 10M calls saves about 2 GB).
inline constexpr uint64_t kMaxRecordingBytes = uint64_t{32} << 30;

// False with `error` = "cannot read recording 'PATH': ..." (not a regular file, too large, unreadable) or
// "recording 'PATH': LINE: ...".
bool read_log(const std::string& path, EventLog& log, std::string& error);

}  // namespace asynccheck::cli
