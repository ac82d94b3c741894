// Fuzz target: the option parser (ASYNCCHECK_OPTIONS comes from the environment of any program).
// Properties: parse_options never crashes, hangs or allocates without bound; it fails with a message; on success
// check_options and output_files agree with it, the help text and the expansion of every path (%p, %h, %r) work, every
// duration prints (format_duration_option) to text that parses back to it, and parsing is deterministic.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "options/options.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void expand(const std::string& path) {
  const std::string expanded = asynccheck::expand_path(path, 4242, 123456789);
  // %p and %r are at most 10 digits, %h at most 255 bytes, each for two bytes of the path.
  FUZZ_CHECK(expanded.size() <= path.size() * 128 + 1, "expand_path grew a %zu-byte path to %zu bytes", path.size(),
             expanded.size());
}

// One check per option type of options.def (a new type needs one here, as it needs parse_<Type> in options.cpp).
void check_Bool(bool) {}
void check_Uint(uint64_t) {}
void check_Duration(uint64_t ns) {
  const std::string text = asynccheck::format_duration_option(ns);
  uint64_t back = 0;
  FUZZ_CHECK(asynccheck::parse_duration(text, back) && back == ns,
             "duration %llu ns prints as '%s', which does not parse back", static_cast<unsigned long long>(ns),
             text.c_str());
}
void check_Text(const std::string& text) { expand(text); }
void check_ExitCode(int code) { FUZZ_CHECK(code >= -1 && code <= 255, "exit code %d out of range", code); }
void check_Level(asynccheck::rules::Level l) {
  FUZZ_CHECK(l != asynccheck::rules::Level::None, "fail_on parsed to level none");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // Quoting: any value without both quote characters is read back whole (the command passes paths and ranges so).
  if (text.find('"') == std::string_view::npos || text.find('\'') == std::string_view::npos) {
    asynccheck::Options quoted;
    std::string why;
    const std::string item = "save=" + asynccheck::quoted_value(text) + ":stats";
    if (asynccheck::parse_options(item, quoted, why)) {
      FUZZ_CHECK(quoted.save == text && quoted.stats, "quoted_value did not read back whole");
    } else {
      // Only a value the option itself refuses (a path too long, a control character): never a split one.
      FUZZ_CHECK(why.find("quote") == std::string::npos, "quoted_value made a bad quote: %s", why.c_str());
    }
  }

  // The duration syntax on its own: what parses prints back to the same value.
  uint64_t ns = 0;
  if (asynccheck::parse_duration(text, ns)) check_Duration(ns);

  asynccheck::Options opts;
  std::string error;
  if (!asynccheck::parse_options(text, opts, error)) {
    FUZZ_CHECK(!error.empty(), "parse_options failed without a message");
    return 0;
  }
#define OPTION(type, name, def, desc) check_##type(opts.name);
#include "options/options.def"
#undef OPTION
  std::string error2;
  FUZZ_CHECK(asynccheck::check_options(opts, error2), "parse_options accepted what check_options rejects: %s",
             error2.c_str());
  asynccheck::OutputFiles files;
  FUZZ_CHECK(asynccheck::output_files(opts, files, error2), "parse_options accepted what output_files rejects: %s",
             error2.c_str());
  expand(files.json);
  expand(files.sarif);
  expand(files.trace);
  FUZZ_CHECK(!asynccheck::options_help().empty(), "options_help() is empty");

  // Parsing is deterministic: the same text from the defaults gives the same options.
  asynccheck::Options again;
  FUZZ_CHECK(asynccheck::parse_options(text, again, error2), "second parse failed: %s", error2.c_str());
#define OPTION(type, name, def, desc) FUZZ_CHECK(again.name == opts.name, "option " #name " differs on a second parse");
#include "options/options.def"
#undef OPTION
  // The raw input as one path: '%' sequences at every position.
  expand(std::string(text));
  return 0;
}
