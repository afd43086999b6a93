// JSON Schema -> GBNF, for response_format json_schema / json_object and tool-call
// arguments. docs/grammar.md lists the supported subset; anything outside it is an
// InvalidArgument naming the keyword and where it is (a JSON pointer), never ignored.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "hearth/status.h"

namespace hearth::grammar {

// A GBNF grammar (start rule `root`) whose sentences are JSON texts valid under `schema`.
Result<std::string> json_schema_to_gbnf(const nlohmann::json& schema);

// For grammars that combine several schemas (e.g. one per tool): the rules of `schema`
// with start rule `name` (its other rules are named "<name>-..."), without the shared
// primitives (`ws`, `json-...`), which json_schema_primitives() gives once.
//   root ::= "<tool_call>" (tool-a | tool-b) "</tool_call>"
//   + json_schema_rules(a, "tool-a") + json_schema_rules(b, "tool-b")
//   + json_schema_primitives()
// A name that is not [A-Za-z0-9_-]+, or is "ws" or "json-...", is InvalidArgument.
Result<std::string> json_schema_rules(const nlohmann::json& schema, const std::string& name);
std::string json_schema_primitives();

// The grammar of any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace hearth::grammar
