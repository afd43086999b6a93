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

// The grammar of any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace hearth::grammar
