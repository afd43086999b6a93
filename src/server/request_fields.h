// The one table of the request fields each endpoint knows: honoured, accepted as a
// documented no-op (fields that by definition do not change the output), or refused with
// a 400 naming the field. A field in no row is unknown and refused too, so nothing a
// client sends is ever silently ignored. docs/api.md ("Request fields") mirrors the table.
#pragma once

#include <optional>
#include <span>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace hearth::server {

// Endpoints, as bits: a row lists every endpoint it applies to.
enum RequestApi : unsigned {
  kCompletionsApi = 1,  // POST /v1/completions
  kChatApi = 2,         // POST /v1/chat/completions
  kMessagesApi = 4,     // POST /v1/messages (and /v1/messages/count_tokens)
  kEmbeddingsApi = 8,   // POST /v1/embeddings
  kResponsesApi = 16,   // POST /v1/responses
};

enum class FieldUse {
  kHonoured,  // parsed and acted on (request_parse.cpp or the route)
  kNoOp,      // accepted and validated by nothing: cannot change the output (why says why)
  kRejected,  // any non-null value is a 400 naming the field (why says why)
};

struct RequestField {
  const char* name;
  unsigned apis;  // RequestApi bits
  FieldUse use;
  const char* why;  // for kNoOp and kRejected: the reason, quoted in errors and docs
};

std::span<const RequestField> request_fields();

// Refuses a body field that is unknown to `api` or rejected there (a null value counts
// as absent for rejected fields).
std::optional<ApiError> check_request_fields(const nlohmann::json& body, RequestApi api);

}  // namespace hearth::server
