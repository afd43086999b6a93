// Test-only JSON Schema validator: an independent check of what the grammar converter
// (src/grammar/json_schema.cpp) promises. It reads the same keywords with their
// JSON Schema meaning (pattern is a regex search, oneOf means exactly one), written
// from the specification, not from the converter.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace hearth::testing {

// "" when `instance` is valid under `schema` (root: the document $refs resolve in),
// else what failed and where.
std::string validate_json_schema(const nlohmann::json& instance, const nlohmann::json& schema,
                                 const nlohmann::json& root);

}  // namespace hearth::testing
