// Validates OpenAI (/v1/completions, /v1/chat/completions) and Anthropic
// (/v1/messages) request bodies into one neutral form. Every rejection names
// the offending field, so clients can fix the request from the message alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/chat_template.h"
#include "server/output/tool_spec.h"
#include "server/service_api.h"

namespace hearth::server {

struct TextRequest {
  std::string model;  // empty = the default (first loaded) model
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool is_chat = false;
  std::string prompt;                                 // completions: prompt text
  std::optional<std::vector<TokenId>> prompt_tokens;  // completions: pre-tokenized prompt
  std::vector<ChatMessage> messages;                  // chat / messages
  std::optional<int64_t> max_tokens;                  // nullopt = fill the context (capped)
  SamplingOptions sampling;
  std::vector<std::string> stop;
  std::string prompt_field = "prompt";  // which field the prompt came from (for errors)
  // Tool calling (server/tool_request.h): the declared functions, as the caller wrote
  // them for the template ({type: function, function: {...}}) and parsed.
  nlohmann::ordered_json tools_json = nlohmann::ordered_json::array();
  std::vector<ToolSpec> tools;
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  // Extra template variables: chat_template_kwargs, enable_thinking, Anthropic thinking.
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  std::optional<int64_t> thinking_budget;  // tokens inside the think block, then closed
};

std::optional<ApiError> parse_completion_request(const nlohmann::json& body, TextRequest& out);
std::optional<ApiError> parse_chat_request(const nlohmann::json& body, TextRequest& out);
std::optional<ApiError> parse_messages_request(const nlohmann::json& body, TextRequest& out);

// The body must be a JSON object; returns the error for anything else.
std::optional<ApiError> parse_json_object(const std::string& body, nlohmann::json& out);

}  // namespace hearth::server
