// The rule catalog: stable ids, titles, documented basis and fixes, generated from rules.def.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace asynccheck::rules {

// How a finding of a rule is reported once observed (see rules.def for the meaning of each level).
enum class Level : uint8_t { None, Note, Warning, Error };

enum class RuleId : uint16_t {
#define RULE(Enum, id, level, title, basis, url, fix) Enum,
#include "rules.def"
#undef RULE
};

struct Rule {
  RuleId rule;
  std::string_view id;  // stable, kebab-case: used in reports, suppressions, baselines and SARIF
  Level level;
  std::string_view title;  // one line
  std::string_view basis;  // the documented sentence it rests on, in our words
  std::string_view url;    // where NVIDIA documents it
  std::string_view fix;    // what to do about it
};

std::span<const Rule> all_rules();
const Rule& rule(RuleId id);
std::optional<RuleId> find_rule(std::string_view id);

std::string_view level_name(Level level);  // "none", "note", "warning", "error"
std::optional<Level> parse_level(std::string_view name);

}  // namespace asynccheck::rules
