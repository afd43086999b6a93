// A JSON Schema `pattern` (the common regex subset) -> a GBNF expression over the
// JSON-encoded characters of a string's contents (without the quotes). The expression
// matches a subset of the strings the regex fully matches: classes give up the
// characters JSON must escape (control characters), so every sentence is a valid JSON
// string body whose decoded value matches the pattern. Unsupported regex features
// (backreferences, lookaround, word boundaries, anchors inside) are InvalidArgument
// naming the feature.
#pragma once

#include <string>
#include <string_view>

#include "hearth/status.h"

namespace hearth::grammar {

Result<std::string> regex_to_gbnf(std::string_view pattern);

}  // namespace hearth::grammar
