// The asynccheck command, a dispatcher over its subcommands:
//   asynccheck [options] -- ./app args...   run the program with the library attached, report at its exit (run.cpp)
//   asynccheck analyze RECORDING [options]   analyze a recording offline, no GPU needed (analyze.cpp)
//   asynccheck merge [options] REPORT.json... combine the JSON reports of many processes into one (merge.cpp)
//   asynccheck --list-rules[=markdown]       the documented rules asynccheck knows
//   asynccheck --version                     "asynccheck X.Y.Z" (version.h, from CMake's project version)
// Options: every library option as --name=value (see --help), plus --error-exitcode N and --fail-on LEVEL.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "rules/rules_markdown.h"
#include "version.h"

using namespace asynccheck;
using namespace asynccheck::cli;

namespace {

void print_help() {
  std::cout << "usage: asynccheck [options] -- PROGRAM [ARGS...]   run PROGRAM with asynccheck attached\n"
               "       asynccheck analyze RECORDING [options]     analyze a run saved with --save (also: --read=FILE)\n"
               "       asynccheck merge [options] REPORT.json...  combine JSON reports of many processes (MPI ranks)\n"
               "       asynccheck --list-rules[=markdown]         the documented rules asynccheck knows\n"
               "       asynccheck --version                       the version\n\n"
               "  --error-exitcode=N   exit with N when findings at or above --fail-on exist that are not in the\n"
               "                       --baseline (default: exit with the program's own code)\n"
               "  --fail-on=LEVEL      note, warning or error (default warning)\n"
               "  --read=FILE          same as 'analyze FILE'\n\n"
               "Output paths expand %p (pid), %h (host) and %r (MPI/Slurm rank, else the pid): docs/mpi.md.\n\n"
            << options_help();
}

}  // namespace

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
  if (args[1] == "--list-rules" || args[1] == "--list-rules=text") {
    for (const rules::Rule& r : rules::all_rules()) {
      std::cout << r.id << "\t" << rules::level_name(r.level) << "\t" << r.title << "\n";
    }
    return 0;
  }
  if (args[1] == "--list-rules=markdown") {
    std::cout << rules::rules_markdown();
    return 0;
  }
  if (args[1] == "analyze") {
    if (args.size() < 3)
      return usage_error("analyze needs a recording file (usage: asynccheck analyze RECORDING [options])");
    size_t i = 3;
    std::string error;
    if (!parse_cli(args, i, cli, error) || !check_options(cli.opts, error)) return usage_error(error);
    if (i < args.size()) return usage_error("unexpected argument '" + args[i] + "' after the recording");
    return analyze_command(args[2], cli);
  }
  if (args[1] == "merge") {
    std::vector<std::string> rest(args.begin() + 2, args.end());
    return merge_command(rest);
  }
  return run_command(args, cli, argv[0]);
}
