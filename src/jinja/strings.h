// Python's str operations on UTF-8 text, code point aware where Python is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jinja/value.h"

namespace hearth::jinja {

bool py_isspace(uint32_t cp);
// str.strip / lstrip / rstrip: byte offsets [begin, end) of what remains. chars: nullptr
// strips whitespace.
std::pair<size_t, size_t> strip_bounds(std::string_view s, const std::string* chars, bool left,
                                       bool right);
// str.split(sep, maxsplit) (sep nullptr: runs of whitespace).
std::vector<std::pair<size_t, size_t>> split_bounds(std::string_view s, const std::string* sep,
                                                    int64_t maxsplit);
// str.splitlines() pieces (without the line breaks).
std::vector<std::string> split_lines(std::string_view s);
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       int64_t count);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);
std::string py_title(std::string_view s);  // str.title()
std::vector<uint32_t> code_points(std::string_view s);
void append_utf8(std::string& out, uint32_t cp);

}  // namespace hearth::jinja
