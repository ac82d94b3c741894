#include "catalog.h"

#include <array>

namespace asynccheck::rules {
namespace {

constexpr std::array kRules = {
#define RULE(Enum, id, level, title, basis, url, fix) Rule{RuleId::Enum, id, Level::level, title, basis, url, fix},
#include "rules.def"
#undef RULE
};

}  // namespace

std::span<const Rule> all_rules() { return kRules; }

const Rule& rule(RuleId id) { return kRules[static_cast<size_t>(id)]; }

std::optional<RuleId> find_rule(std::string_view id) {
  for (const Rule& r : kRules) {
    if (r.id == id) return r.rule;
  }
  return std::nullopt;
}

std::string_view level_name(Level level) {
  switch (level) {
    case Level::None: return "none";
    case Level::Note: return "note";
    case Level::Warning: return "warning";
    case Level::Error: return "error";
  }
  return "none";
}

std::optional<Level> parse_level(std::string_view name) {
  for (Level l : {Level::None, Level::Note, Level::Warning, Level::Error}) {
    if (level_name(l) == name) return l;
  }
  return std::nullopt;
}

}  // namespace asynccheck::rules
