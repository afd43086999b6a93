// JSON text from values that may carry untrusted strings (request paths, model
// metadata, user prompts). nlohmann::json::dump throws on invalid UTF-8; an
// exception there once escaped the HTTP error handler and ended the process, so
// every serialisation of outside data goes through here: invalid bytes become
// U+FFFD and nothing throws.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hearth {

// indent < 0: compact, one line.
std::string json_text(const nlohmann::json& value, int indent = -1);

// Well-formed UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates, nothing
// above U+10FFFF, no truncated sequence.
bool is_valid_utf8(std::string_view text);

}  // namespace hearth
