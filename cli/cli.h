// What the subcommands of the asynccheck command share: the command line's options, usage errors, and the exit
// code a report asks for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "options/options.h"
#include "report/report.h"
#include "rules/catalog.h"

namespace asynccheck::cli {

inline constexpr int kUsageError = 2;

// Prints "asynccheck: ERROR: MSG" and the pointer to --help; returns kUsageError.
int usage_error(const std::string& msg);

struct Cli {
  Options opts;
  std::vector<std::string> given;  // options named on the command line ('-' written '_')
  int error_exitcode = -1;
  rules::Level fail_on = rules::Level::Warning;
  std::string read;
  bool was_given(std::string_view name) const;
};

// Parses "--name=value" / "--name value" options from args[i] on, up to "--" (consumed) or the first argument
// that is not an option; `i` is left there. False with `error` naming the option and what is valid.
bool parse_cli(std::vector<std::string>& args, size_t& i, Cli& cli, std::string& error);

// The exit code --error-exitcode asks for after a report (findings at or above --fail-on that are not in the
// baseline), or -1.
int exit_code_for(const report::Emitted& emitted, const Cli& cli);

// The subcommands (each in its own file).
int run_command(std::vector<std::string>& args, Cli& cli, const char* argv0);  // run.cpp: asynccheck -- PROGRAM
int analyze_command(const std::string& path, Cli& cli);                        // analyze.cpp
int merge_command(std::vector<std::string>& args);                             // merge.cpp: args after "merge"

}  // namespace asynccheck::cli
