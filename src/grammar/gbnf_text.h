// Small helpers for writing GBNF text (used by the JSON Schema and regex converters).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hearth::grammar {

// A GBNF string literal (with quotes) matching exactly `bytes` (UTF-8).
std::string gbnf_literal(std::string_view bytes);
// One code point as it may appear inside a GBNF [class] or literal (escaped if needed).
std::string gbnf_class_char(uint32_t cp);

}  // namespace hearth::grammar
