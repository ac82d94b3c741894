#include "cli/cli.h"

#include "report/report.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace asynccheck::cli {

int usage_error(const std::string& msg) {
  std::cerr << "asynccheck: ERROR: " << report::printable(msg) << "\n(run 'asynccheck --help' for usage)\n";
  return kUsageError;
}

bool Cli::was_given(std::string_view name) const { return std::find(given.begin(), given.end(), name) != given.end(); }

bool parse_cli(std::vector<std::string>& args, size_t& i, Cli& cli, std::string& error) {
  for (; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") {
      ++i;
      return true;
    }
    if (a.rfind("--", 0) != 0) return true;
    a = a.substr(2);
    std::string name = a, value;
    size_t eq = a.find('=');
    if (eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      value = args[++i];
    } else {
      error = "option '--" + name + "' needs a value";
      return false;
    }
    const std::string raw_name = name;
    for (char& c : name)
      if (c == '-') c = '_';
    if (name == "error_exitcode") {
      char* end = nullptr;
      long v = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || v < 0 || v > 255) {
        error = "--error-exitcode: '" + value + "' is not an exit code (valid: 0 to 255)";
        return false;
      }
      cli.error_exitcode = static_cast<int>(v);
    } else if (name == "fail_on") {
      auto l = rules::parse_level(value);
      if (!l || *l == rules::Level::None) {
        error = "--fail-on: '" + value + "' is not a level (valid: note, warning, error)";
        return false;
      }
      cli.fail_on = *l;
    } else if (name == "read") {
      cli.read = value;
    } else if (!set_option(name, value, cli.opts, error)) {
      // The library's message names the option and what is valid; only the command's own options are added.
      if (error.rfind("unknown option", 0) == 0) {
        error = "unknown option '--" + raw_name + "' (valid: error-exitcode, fail-on, read, " +
                error.substr(error.find("(valid: ") + 8);
      }
      return false;
    }
    cli.given.push_back(name);
  }
  return true;
}

int exit_code_for(const report::Emitted& e, const Cli& cli) {
  if (cli.error_exitcode >= 0 && e.worst_new != rules::Level::None && e.worst_new >= cli.fail_on)
    return cli.error_exitcode;
  return -1;
}

}  // namespace asynccheck::cli
