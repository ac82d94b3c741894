// Options of asynccheck, generated from options.def.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rules/catalog.h"

namespace asynccheck {

struct Options {
#define OPTION_Bool bool
#define OPTION_Uint uint64_t
#define OPTION_Duration uint64_t
#define OPTION_Text std::string
#define OPTION_ExitCode int
#define OPTION_Level rules::Level
#define OPTION(type, name, def, desc) OPTION_##type name = def;
#include "options/options.def"
#undef OPTION
#undef OPTION_Bool
#undef OPTION_Uint
#undef OPTION_Duration
#undef OPTION_Text
#undef OPTION_ExitCode
#undef OPTION_Level
};

// Every option's name, in the table's order ('_' between words).
std::vector<std::string_view> option_names();

// What an option takes on the command line: a Flag (Bool) is on as a bare --name and takes a value only as
// --name=VALUE; a Value option takes --name=VALUE or --name VALUE.
enum class OptionKind { Unknown, Flag, Value };
OptionKind option_kind(std::string_view name);

// Parses "name=value" items separated by ':' or whitespace (',' separates list values) into `opts` (later items win). Returns false with
// `error` naming the problem and what would be valid; `opts` then keeps the items before the bad one.
bool parse_options(std::string_view text, Options& opts, std::string& error);

// `value` as an ASYNCCHECK_OPTIONS item's value that parse_options reads back whole: quoted when it holds ':', white
// space or a quote (name="a:b c"; a value holding both quote characters cannot be given). For the command, which
// passes its options to the library in that variable.
std::string quoted_value(std::string_view value);

// Every item of `text` that is valid on its own, the others skipped (no error): what a run whose options are bad
// still honours of them (require_monitoring).
void parse_valid_items(std::string_view text, Options& opts);

// Sets one option, checking its own value; what depends on several options is checked by check_options.
bool set_option(std::string_view name, std::string_view value, Options& opts, std::string& error);

// Checks what depends on several options (--format needs --output, ...). parse_options calls it at the end;
// the command calls it after its whole command line.
bool check_options(const Options& opts, std::string& error);

// The option list for help=1 / --help: name, type, default, description; only those of `only` when it is not empty
// (asynccheck merge --help).
std::string options_help(const std::vector<std::string_view>& only = {});

// A report path that means standard output (--json=-; also sarif, trace, output with one format, save_baseline).
inline constexpr std::string_view kStdout = "-";

// The files a run writes, from --format/--output and the per-format options (paths not yet expanded). With one
// format, --output gets its extension (.json, .sarif, .trace.json, .html) unless it ends with it (or with .json for a
// trace) or is '-'; with several it is a stem.
struct OutputFiles {
  std::string json, sarif, trace, html;
};
// False with `error` for an unknown format, a format without --output, one format given two paths, '-' for
// several reports, two reports or a report and the summary (log_file=stdout) on standard output, or '-' for save
// (a recording written as the run goes) or log_file (whose stream names are stdout and stderr).
bool output_files(const Options& opts, OutputFiles& out, std::string& error);

// Parses a duration: a whole number with ns, us, ms or s, or no unit (us).
bool parse_duration(std::string_view text, uint64_t& ns);
std::string format_duration_option(uint64_t ns);

// The rank of a process in an MPI or Slurm job, from the first of kRankVariables that holds a whole number
// (at most 9 digits; a variable holding anything else is passed over). Launcher-specific variables come before
// Slurm's: under `mpirun` inside a Slurm allocation, SLURM_PROCID is the batch step's (0 for every rank).
inline constexpr std::string_view kRankVariables[] = {"OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "PMIX_RANK",
                                                      "PMI_RANK", "SLURM_PROCID"};
struct Rank {
  int64_t value = -1;       // -1: no rank (not in an MPI or Slurm job)
  std::string variable;     // the variable it came from
  uint64_t world_size = 0;  // processes in the job, from the same launcher's size variable; 0 = not known
  std::string size_variable;
  bool known() const { return value >= 0; }
};
// `getenv` is the lookup (tests pass their own); the size comes from the variable paired with the rank's:
// OMPI_COMM_WORLD_SIZE, MV2_COMM_WORLD_SIZE, PMI_SIZE, SLURM_STEP_NUM_TASKS (PMIX_RANK has none).
Rank rank_from(const char* (*getenv)(const char*));
Rank process_rank();  // from this process's environment (secure_getenv)

// Expands %p (pid), %h (host name) and %r (the rank; the pid when `rank` is unknown, so that names stay one per
// process outside MPI) in an output path.
std::string expand_path(std::string_view pattern, int pid, int64_t rank = -1);

// True when `path` names one file per process: it holds %p or %r.
bool per_process_path(std::string_view path);

}  // namespace asynccheck
