// JSON in and out of template values: the render context from nlohmann::json, and
// Python's json.dumps for the tojson filter.
#pragma once

#include <nlohmann/json.hpp>

#include "jinja/builtins.h"
#include "jinja/value.h"

namespace hearth::jinja {

// JSON objects keep their key order (nlohmann::ordered_json semantics are not needed:
// the caller's json preserves what it parsed only when it is ordered; see template.cpp).
Value from_json(const nlohmann::json& j, bool literal_strings);
Value from_ordered_json(const nlohmann::ordered_json& j, bool literal_strings);

}  // namespace hearth::jinja
