#include "rules_markdown.h"

#include <cctype>
#include <string_view>

#include "catalog.h"

namespace asynccheck::rules {
namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Escapes the characters of catalog prose that Markdown would otherwise read as markup. An underscore between two
// alphanumerics (CUDA_LAUNCH_BLOCKING) cannot start or end emphasis, so it is left alone to keep the file readable;
// `|` is escaped everywhere so that text is also safe inside a table cell.
std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    bool esc = false;
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '[':
      case ']':
      case '<':
      case '|': esc = true; break;
      case '_': {
        const bool intraword = i > 0 && i + 1 < text.size() && is_word_char(text[i - 1]) && is_word_char(text[i + 1]);
        esc = !intraword;
        break;
      }
      default: break;
    }
    if (esc) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string rules_markdown() {
  std::string md;
  md += "# asynccheck rules\n\n";
  md +=
      "Generated from the rule catalog (`rules/rules.def`) by `asynccheck --list-rules=markdown`; do not edit by "
      "hand. Each rule rests on a sentence of NVIDIA's documentation, linked from its section. The ids are stable: "
      "use them in suppressions and baselines.\n\n";
  md += "## Levels\n\n";
  md +=
      "A rule's level says how a finding of it is reported when asynccheck observes the call. "
      "**none**: the documentation says the call is asynchronous; asynccheck never flags it. "
      "**note**: the call is meant to block (explicit synchronization), reported only when it waited for GPU work at "
      "least `--threshold` (or its site's waits under it add up to `--site-threshold`); the `cost-*` rules are notes "
      "too: time a call spent on its own, waiting for no GPU work, reported from `--cost-threshold`. "
      "**warning**: an implicit synchronization or serialization the author may not know of. "
      "**error**: an \"Async\" call that the documentation says may block the host.\n\n";
  md += "## CUDA graphs\n\n";
  md +=
      "Work issued to a stream while it captures a graph (`cudaStreamBeginCapture` ... `cudaStreamEndCapture`, "
      "including streams that joined the capture by waiting on an event recorded in it) is recorded into the graph, "
      "not executed, so no rule about its execution applies: such calls are counted (`captured_calls` in the JSON "
      "report) and never judged. Calls that a capture refused (CUDA errors 900-908, e.g. a synchronization of a "
      "capturing stream, or any use of the legacy stream while a blocking stream captures) returned at once without "
      "doing anything and are not judged either. A graph launch is judged like a kernel launch "
      "([`graph-launch`](#graph-launch)): what it holds the host for is measured.\n\n";
  md += "## Summary\n\n";
  md += "| Id | Level | Title |\n";
  md += "|----|-------|-------|\n";
  for (const Rule& r : all_rules()) {
    // Ids are kebab-case, so the heading anchor that Markdown renderers derive from `### id` is the id itself.
    md += "| [`";
    md += r.id;
    md += "`](#";
    md += r.id;
    md += ") | ";
    md += level_name(r.level);
    md += " | ";
    md += escape(r.title);
    md += " |\n";
  }
  md += "\n## Rules\n";
  for (const Rule& r : all_rules()) {
    md += "\n### ";
    md += r.id;
    md += "\n\n";
    md += escape(r.title);
    md += "\n\n- Level: ";
    md += level_name(r.level);
    md += "\n- Documented basis: ";
    md += escape(r.basis);
    md += " (<";
    md += r.url;
    md += ">)\n- Fix: ";
    md += escape(r.fix);
    md += "\n";
  }
  return md;
}

}  // namespace asynccheck::rules
