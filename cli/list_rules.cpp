// asynccheck --list-rules[=text|markdown|json]: the rule catalog (rules/rules.def), for people (text), the docs
// (markdown: docs/rules.md is made from it) and tools (json: one object per rule, every field of the catalog).
#include <iostream>
#include <string_view>

#include "cli/cli.h"
#include "report/report.h"
#include "rules/catalog.h"
#include "rules/rules_markdown.h"

namespace asynccheck::cli {

int list_rules(std::string_view format, bool more_arguments) {
  if (more_arguments) return usage_error("--list-rules takes no other arguments");
  if (format == "text") {
    for (const rules::Rule& r : rules::all_rules()) {
      std::cout << r.id << "\t" << rules::level_name(r.level) << "\t" << r.title << "\n";
    }
  } else if (format == "markdown") {
    std::cout << rules::rules_markdown();
  } else if (format == "json") {
    using report::json_string;
    std::cout << "[";
    bool first = true;
    for (const rules::Rule& r : rules::all_rules()) {
      std::cout << (first ? "\n" : ",\n") << "  {\"id\": " << json_string(r.id)
                << ", \"level\": " << json_string(rules::level_name(r.level)) << ", \"title\": " << json_string(r.title)
                << ", \"basis\": " << json_string(r.basis) << ", \"url\": " << json_string(r.url)
                << ", \"fix\": " << json_string(r.fix) << "}";
      first = false;
    }
    std::cout << "\n]\n";
  } else {
    return usage_error("--list-rules: '" + std::string(format) + "' is not a format (valid: text, markdown, json)");
  }
  return 0;
}

}  // namespace asynccheck::cli
