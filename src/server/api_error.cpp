#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "hearth/runtime/runtime.h"

namespace hearth::server {

ApiError invalid_request(std::string message, std::string param, std::string code) {
  ApiError e;
  e.http_status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError type_error(const std::string& field, const std::string& expected) {
  return invalid_request("'" + field + "' must be " + expected, field, "invalid_type");
}

ApiError value_error(const std::string& field, const std::string& why) {
  return invalid_request("'" + field + "' " + why, field, "invalid_value");
}

ApiError missing_field(const std::string& field) {
  return invalid_request("'" + field + "' is required", field, "missing_field");
}

ApiError from_status(const Status& status, std::string param) {
  ApiError e;
  e.message = status.message();
  e.param = std::move(param);
  // The sticky-session errors (runtime.h): 404 no_session, 409 sticky_busy.
  const std::string_view session_code = runtime::session_error_code(status);
  if (!session_code.empty()) {
    e.http_status = session_code == runtime::kNoSession ? 404 : 409;
    e.type = session_code == runtime::kNoSession ? "not_found_error" : "invalid_request_error";
    e.code = std::string(session_code);
    if (e.param.empty()) e.param = "session_id";
    return e;
  }
  switch (status.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kUnsupported:
      e.http_status = 400;
      break;
    case ErrorCode::kOutOfRange:
      e.http_status = 400;
      e.code = "context_length_exceeded";
      break;
    case ErrorCode::kNotFound:
      e.http_status = 404;
      e.type = "not_found_error";
      e.code = "not_found";
      break;
    case ErrorCode::kAlreadyExists:
      e.http_status = 409;
      e.code = "already_exists";
      break;
    case ErrorCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      e.code = "server_busy";
      break;
    case ErrorCode::kUnavailable:
      e.http_status = 503;
      e.type = "server_error";
      e.code = "unavailable";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
      e.code = error_code_name(status.code());
      break;
  }
  return e;
}

static nlohmann::json null_if_empty(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

std::string openai_error_body(const ApiError& error) {
  nlohmann::json j;
  j["error"] = {{"message", error.message},
                {"type", error.type},
                {"param", null_if_empty(error.param)},
                {"code", null_if_empty(error.code)}};
  return json_text(j);
}

std::string anthropic_error_body(const ApiError& error) {
  // Anthropic's error types differ slightly from OpenAI's for the same statuses.
  std::string type = error.type;
  switch (error.http_status) {
    case 400:
      type = "invalid_request_error";
      break;
    case 401:
      type = "authentication_error";
      break;
    case 403:
      type = "permission_error";
      break;
    case 404:
      type = "not_found_error";
      break;
    case 413:
      type = "request_too_large";
      break;
    case 429:
      type = "rate_limit_error";
      break;
    case 503:
      type = "overloaded_error";
      break;
    default:
      if (error.http_status >= 500) type = "api_error";
      break;
  }
  std::string message = error.message;
  if (!error.param.empty() && message.find(error.param) == std::string::npos) {
    message = error.param + ": " + message;
  }
  nlohmann::json j = {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
  return json_text(j);
}

}  // namespace hearth::server
