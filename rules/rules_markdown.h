// The rule catalog rendered as a Markdown reference for users (docs/rules.md, `asynccheck --list-rules=markdown`).
#pragma once

#include <string>

namespace asynccheck::rules {

// The whole reference: title, what the levels mean, a summary table, then one section per rule in catalog order.
// Deterministic: the same catalog always gives the same bytes (docs/rules.md is checked against it by a test).
std::string rules_markdown();

}  // namespace asynccheck::rules
