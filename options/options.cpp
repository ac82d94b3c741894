#include "options/options.h"

#include <unistd.h>

#include <charconv>

namespace asynccheck {
namespace {

bool parse_value(std::string_view name, std::string_view v, bool& out, std::string& error) {
  if (v == "1" || v == "true" || v == "yes") { out = true; return true; }
  if (v == "0" || v == "false" || v == "no") { out = false; return true; }
  error = "option '" + std::string(name) + "': '" + std::string(v) + "' is not a boolean (valid: 1, 0, true, false, yes, no)";
  return false;
}

bool parse_value(std::string_view name, std::string_view v, uint64_t& out, std::string& error) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    error = "option '" + std::string(name) + "': '" + std::string(v) + "' is not a non-negative whole number";
    return false;
  }
  return true;
}

bool parse_value(std::string_view, std::string_view v, std::string& out, std::string&) {
  out = std::string(v);
  return true;
}

std::string default_text(bool v) { return v ? "1" : "0"; }
std::string default_text(uint64_t v) { return std::to_string(v); }
std::string default_text(const std::string& v) { return v.empty() ? "\"\"" : v; }

// Ranges that the type alone does not express.
bool validate(const Options& o, std::string& error) {
  if (o.activity_buffer_kb < 64 || o.activity_buffer_kb > 262144) {
    error = "option 'activity_buffer_kb': " + std::to_string(o.activity_buffer_kb) + " is out of range (valid: 64 to 262144)";
    return false;
  }
  if (o.threshold_us > 60'000'000) {
    error = "option 'threshold_us': " + std::to_string(o.threshold_us) + " is out of range (valid: 0 to 60000000)";
    return false;
  }
  return true;
}

std::string valid_names() {
  std::string out;
#define OPTION(type, name, def, desc) out += (out.empty() ? "" : ", ") + std::string(#name);
#include "options/options.def"
#undef OPTION
  return out;
}

}  // namespace

bool set_option(std::string_view name, std::string_view value, Options& opts, std::string& error) {
  Options next = opts;
  bool known = false, ok = true;
#define OPTION(type, oname, def, desc) \
  if (name == #oname) { known = true; ok = parse_value(name, value, next.oname, error); }
#include "options/options.def"
#undef OPTION
  if (!known) {
    error = "unknown option '" + std::string(name) + "' (valid: " + valid_names() + ")";
    return false;
  }
  if (!ok || !validate(next, error)) return false;
  opts = std::move(next);
  return true;
}

bool parse_options(std::string_view text, Options& opts, std::string& error) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ':' || text[i] == ',' || text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ':' && text[j] != ',' && text[j] != ' ' && text[j] != '\t' && text[j] != '\n') ++j;
    if (j == i) break;
    std::string_view item = text.substr(i, j - i);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      error = "expected name=value, got '" + std::string(item) + "'";
      return false;
    }
    if (!set_option(item.substr(0, eq), item.substr(eq + 1), opts, error)) return false;
    i = j;
  }
  return true;
}

std::string options_help() {
  const Options defaults;
  std::string out = "asynccheck options (ASYNCCHECK_OPTIONS=name=value:name=value, or --name=value):\n";
#define OPTION(type, name, def, desc) \
  out += "  " + std::string(#name) + " (" #type ", default " + default_text(defaults.name) + ")\n      " desc "\n";
#include "options/options.def"
#undef OPTION
  return out;
}

std::string expand_path(std::string_view pattern, int pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'p') { out += std::to_string(pid); ++i; continue; }
      if (pattern[i + 1] == 'h') {
        char host[256] = {};
        if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
        out += host;
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

}  // namespace asynccheck
