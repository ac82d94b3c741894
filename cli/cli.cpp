#include "cli/cli.h"

#include "options/nearest.h"
#include "report/exit_code.h"
#include "report/report.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace asynccheck::cli {

int usage_error(const std::string& msg) {
  std::cerr << "asynccheck: ERROR: " << report::printable(msg) << "\n(run 'asynccheck --help' for usage)\n";
  return kUsageError;
}

std::string dashed(std::string_view name) {
  std::string s(name);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

bool Cli::was_given(std::string_view name) const { return std::find(given.begin(), given.end(), name) != given.end(); }

namespace {

// The command's own option, besides the table's (options.def): --read (= analyze FILE). The table's help means the
// command's help here.
constexpr std::string_view kCommandOptions[] = {"read"};

std::string unknown_option(const std::string& raw_name, const std::string& name) {
  std::vector<std::string_view> names = option_names();
  names.insert(names.end(), std::begin(kCommandOptions), std::end(kCommandOptions));
  std::string valid;
  for (std::string_view n : names) valid += (valid.empty() ? "" : ", ") + dashed(n);
  const std::string_view near = nearest_name(name, names);
  return "unknown option '--" + raw_name + "'" + (near.empty() ? "" : "; did you mean '--" + dashed(near) + "'?") +
         " (valid: " + valid + ")";
}

}  // namespace

bool parse_cli(std::vector<std::string>& args, size_t& i, Cli& cli, std::string& error) {
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      return true;
    }
    if (a == "-h") {
      cli.help = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) return true;
    const size_t eq = a.find('=');
    const std::string raw_name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::string name = raw_name;
    std::replace(name.begin(), name.end(), '-', '_');
    const bool has_value = eq != std::string::npos;
    std::string value = has_value ? a.substr(eq + 1) : "";
    // Known before its value is looked for: a misspelt on/off option is unknown, not "needs a value".
    const OptionKind kind = option_kind(name);
    const bool own =
        std::find(std::begin(kCommandOptions), std::end(kCommandOptions), name) != std::end(kCommandOptions);
    if (kind == OptionKind::Unknown && !own) {
      error = unknown_option(raw_name, name);
      return false;
    }
    if (name == "help") {  // the command's help, whatever subcommand: printed instead of running anything
      if (has_value && value != "1" && value != "true" && value != "yes") {
        error = "option '--help' takes no value (got '" + value + "')";
        return false;
      }
      cli.help = true;
      continue;
    }
    if (!has_value) {
      if (kind == OptionKind::Flag) {
        // On/off options are on when named; off only as --name=0, so that "--stats ./app" never takes ./app.
        value = "1";
      } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
        value = args[++i];
      } else {
        error = "option '--" + raw_name + "' needs a value (--" + raw_name + "=VALUE)";
        return false;
      }
    }
    if (name == "read") {
      cli.read = value;
    } else if (!set_option(name, value, cli.opts, error)) {
      return false;
    }
    cli.given.push_back(name);
  }
  return true;
}

int exit_code_for(const report::Emitted& e, const Cli& cli) { return report::requested_exit_code(cli.opts, e); }

}  // namespace asynccheck::cli
