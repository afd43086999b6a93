// The constrained-output request fields of the OpenAI endpoints: `grammar` (GBNF,
// llama-server's extension), `json_schema` (llama-server's shorthand) and
// `response_format` (text, json_object, json_schema). They become the runtime's
// SamplingOptions::grammar; an invalid grammar or schema is a 400 naming the field.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/service_api.h"

namespace hearth::server {

std::optional<ApiError> parse_grammar_fields(const nlohmann::json& body, SamplingOptions& out);

}  // namespace hearth::server
