// Low-level readers of tool-call text shared by the family parsers: where a bracketed
// value ends, JSON call objects, and Python-style calls `name(k=v, ...)`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/output/tool_syntax.h"

namespace hearth::server {

// The end (one past the closing bracket) of the bracketed value that opens at s[pos]
// ('{' or '['), skipping brackets inside strings; npos while it is still open. python:
// strings may also be single-quoted.
size_t bracketed_end(std::string_view s, size_t pos, bool python);

// Parses JSON text, or nullopt (never throws).
std::optional<nlohmann::ordered_json> parse_json(std::string_view text);

// One call from a JSON object holding "name" and "arguments" (or "parameters"; an
// object, or a string of JSON), or the same under "function"; nullopt otherwise.
std::optional<ToolCall> call_from_json(const nlohmann::ordered_json& value);

// Calls from a JSON object or an array of call objects; nullopt if any is not a call.
std::optional<std::vector<ToolCall>> calls_from_json_text(std::string_view text);

// `[f(a=1, b="x"), g()]` (or without the brackets: `f(a=1)`); keyword arguments with
// Python literals (strings, numbers, True/False/None, lists, dicts). nullopt otherwise.
std::optional<std::vector<ToolCall>> parse_pythonic_calls(std::string_view text);

// The index of the first byte of `s` that is not ASCII blank, or s.size().
size_t skip_blank(std::string_view s, size_t pos = 0);

}  // namespace hearth::server
