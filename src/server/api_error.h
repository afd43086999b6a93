// HTTP-facing errors: a status code plus the fields OpenAI clients expect
// ({"error":{"message","type","param","code"}}), also renderable in the Anthropic
// shape ({"type":"error","error":{"type","message"}}) for /v1/messages.
#pragma once

#include <string>

#include "hearth/status.h"

namespace hearth::server {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending request field, empty when none
  std::string code;   // machine-readable detail, empty when none
};

ApiError invalid_request(std::string message, std::string param = "", std::string code = "");
ApiError from_status(const Status& status, std::string param = "");
// The 400s of request parsing, each naming the field: a value of the wrong JSON type
// ("'F' must be EXPECTED", code invalid_type), an unacceptable value ("'F' WHY",
// invalid_value), a required field that is absent (missing_field).
ApiError type_error(const std::string& field, const std::string& expected);
ApiError value_error(const std::string& field, const std::string& why);
ApiError missing_field(const std::string& field);

std::string openai_error_body(const ApiError& error);
std::string anthropic_error_body(const ApiError& error);

}  // namespace hearth::server
