// The asynccheck command, a dispatcher over its subcommands:
//   asynccheck [options] -- ./app args...   run the program with the library attached, report at its exit (run.cpp)
//   asynccheck analyze RECORDING [options]   analyze a recording offline, no GPU needed (analyze.cpp)
//   asynccheck merge [options] REPORT.json... combine the JSON reports of many processes into one (merge.cpp)
//   asynccheck --list-rules[=FORMAT]         the documented rules asynccheck knows (list_rules.cpp)
//   asynccheck --version                     "asynccheck X.Y.Z" (version.h, from CMake's project version)
// Options: every option of options/options.def as --name=value (see --help); each subcommand takes --help.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "version.h"

using namespace asynccheck;
using namespace asynccheck::cli;

namespace asynccheck::cli {

void print_help() {
  std::cout << "usage: asynccheck [options] -- PROGRAM [ARGS...]   run PROGRAM with asynccheck attached\n"
               "       asynccheck analyze RECORDING [options]     analyze a run saved with --save (also: --read=FILE)\n"
               "       asynccheck merge [options] REPORT.json...  combine JSON reports of many processes (MPI ranks)\n"
               "       asynccheck --list-rules[=text|markdown|json]  the documented rules asynccheck knows\n"
               "       asynccheck --version                       the version\n"
               "       asynccheck SUBCOMMAND --help               a subcommand's own help\n\n"
               "  --read=FILE          same as 'analyze FILE'\n"
               "On/off options are on as a bare --name (--overwrite); off as --name=0.\n"
               "Output paths expand %p (pid), %h (host) and %r (MPI/Slurm rank, else the pid): docs/mpi.md.\n"
               "A report path '-' is standard output (--json=-).\n"
               "Exit codes: the program's own; 2 bad options or input (the program did not run); 126/127 the program\n"
               "could not be started (as a shell); 1 a report could not be written (and the program exited 0);\n"
               "--error-exitcode's N for findings; 4 monitoring could not start or stopped before the end, with\n"
               "--require-monitoring.\n\n"
            << options_help();
}

}  // namespace asynccheck::cli

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  Cli cli;
  if (args.size() < 2) return usage_error("no program to run (usage: asynccheck [options] -- PROGRAM [ARGS...])");
  if (args[1] == "--help" || args[1] == "-h") {
    print_help();
    return 0;
  }
  if (args[1] == "--version") {
    std::cout << "asynccheck " ASYNCCHECK_VERSION "\n";
    return 0;
  }
  if (args[1] == "--list-rules" || args[1].starts_with("--list-rules=")) {
    return list_rules(args[1] == "--list-rules" ? "text" : args[1].substr(13), args.size() > 2);
  }
  if (args[1] == "analyze") {
    std::vector<std::string> rest(args.begin() + 2, args.end());
    return analyze_subcommand(rest);
  }
  if (args[1] == "merge") {
    std::vector<std::string> rest(args.begin() + 2, args.end());
    return merge_command(rest);
  }
  return run_command(args, cli, argv[0]);
}
