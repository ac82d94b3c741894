// What the subcommands of the asynccheck command share: the command line's options, usage errors, and the exit
// code a report asks for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "options/options.h"
#include "report/exit_code.h"
#include "report/report.h"
#include "rules/catalog.h"

namespace asynccheck::cli {

inline constexpr int kUsageError = report::kUsageExitCode;

// An option's name as the command line writes it: '-' between words (print_limit: print-limit).
std::string dashed(std::string_view name);

// Prints "asynccheck: ERROR: MSG" and the pointer to --help; returns kUsageError.
int usage_error(const std::string& msg);

struct Cli {
  Options opts;
  std::vector<std::string> given;  // options named on the command line ('-' written '_')
  bool help = false;               // --help or -h: the subcommand's help, and nothing else
  std::string read;
  bool was_given(std::string_view name) const;
};

// Parses "--name=value" / "--name value" options from args[i] on (on/off options: a bare "--name" is on, a value
// only as "--name=0"), up to "--" (consumed) or the first argument that is not an option; `i` is left there.
// "--help" and "-h" set `help`. False with `error` naming the option and what is valid (an unknown one with the
// nearest valid name).
bool parse_cli(std::vector<std::string>& args, size_t& i, Cli& cli, std::string& error);

// The exit code the options ask for after a report (report/exit_code.h: --require-monitoring, --error-exitcode
// and --fail-on), or -1.
int exit_code_for(const report::Emitted& emitted, const Cli& cli);

// The subcommands (each in its own file).
void print_help();                                                             // main.cpp: asynccheck --help
int run_command(std::vector<std::string>& args, Cli& cli, const char* argv0);  // run.cpp: asynccheck -- PROGRAM
int analyze_subcommand(std::vector<std::string>& args);                        // analyze.cpp: args after "analyze"
int analyze_command(const std::string& path, Cli& cli);                        // analyze.cpp: a parsed command line
int merge_command(std::vector<std::string>& args);                             // merge.cpp: args after "merge"
// list_rules.cpp: --list-rules=FORMAT (text, markdown, json); `more_arguments`: anything followed it (an error).
int list_rules(std::string_view format, bool more_arguments);

}  // namespace asynccheck::cli
