// Reading a recording for the command (analyze.cpp), shared with the run subcommand, which reports the
// recordings its program's processes saved.
#pragma once

#include <cstdint>
#include <string>

#include "analysis/events.h"

namespace asynccheck {
class Replay;
}

namespace asynccheck::cli {

// A recording is a regular file of at most this many bytes (a run of 10M calls saves about 2 GB).
inline constexpr uint64_t kMaxRecordingBytes = uint64_t{32} << 30;

// False with `error` = "cannot read recording 'PATH': ..." (not a regular file, too large, unreadable) or
// "recording 'PATH': LINE: ...".
// With `replay`, a recording written as the run went is analyzed in its steps as it is read (analysis/replay.h).
bool read_log(const std::string& path, EventLog& log, std::string& error, Replay* replay = nullptr);

}  // namespace asynccheck::cli
