// Options of asynccheck, generated from options.def.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace asynccheck {

struct Options {
#define OPTION_Bool bool
#define OPTION_Uint uint64_t
#define OPTION_Text std::string
#define OPTION(type, name, def, desc) OPTION_##type name = def;
#include "options/options.def"
#undef OPTION
#undef OPTION_Bool
#undef OPTION_Uint
#undef OPTION_Text
};

// Parses "name=value" items separated by ':' ',' or whitespace into `opts` (later items win). Returns false with
// `error` naming the problem and what would be valid; `opts` then keeps the items before the bad one.
bool parse_options(std::string_view text, Options& opts, std::string& error);

// Sets one option; the same validation as parse_options.
bool set_option(std::string_view name, std::string_view value, Options& opts, std::string& error);

// The option list for help=1 / --help: name, type, default, description.
std::string options_help();

// Expands %p (pid) and %h (host name) in an output path.
std::string expand_path(std::string_view pattern, int pid);

}  // namespace asynccheck
