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

std::string openai_error_body(const ApiError& error);
std::string anthropic_error_body(const ApiError& error);

}  // namespace hearth::server
