// Stable text names of the event enums: used by recordings and reports, so never change a spelling.
#pragma once

#include <optional>
#include <string_view>

#include "analysis/events.h"

namespace asynccheck {

std::string_view name_of(rules::ApiKind v);
std::string_view name_of(rules::CopyDirection v);
std::string_view name_of(rules::MemoryKind v);
std::string_view name_of(rules::StreamKind v);
std::string_view name_of(rules::WaitMode v);
std::string_view name_of(rules::ModuleLoading v);
std::string_view name_of(Domain v);
std::string_view name_of(GpuOpKind v);
std::string_view name_of(MarkKind v);

// Parse a name written by name_of; nullopt when the text is not one of the names.
template <typename Enum>
std::optional<Enum> parse_name(std::string_view text);

// All valid names of an enum, comma-separated, for error messages.
template <typename Enum>
std::string valid_names();

}  // namespace asynccheck
