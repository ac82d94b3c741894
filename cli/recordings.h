// Reading a recording for the command (analyze.cpp), shared with the run subcommand, which reports the
// recordings its program's processes saved.
#pragma once

#include <string>

#include "analysis/events.h"

namespace asynccheck::cli {

// False with `error` = "cannot read recording 'PATH': ..." or "recording 'PATH': LINE: ...".
bool read_log(const std::string& path, EventLog& log, std::string& error);

}  // namespace asynccheck::cli
