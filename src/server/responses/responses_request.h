// The body of POST /v1/responses (OpenAI's Responses API) into the chat path's
// TextRequest: `input` items become chat messages (messages, function_call,
// function_call_output, reasoning), flat function tools and tool_choice become the chat
// shapes tool_request.cpp parses, `text.format` becomes the response_format grammar,
// `reasoning.effort` becomes enable_thinking. Every rejection names the Responses field
// (`input[2].content[0].type`, `text.format.schema`, `tools[0].type`), never the chat
// field it was translated to.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/request_parse.h"

namespace hearth::server {

struct ResponsesRequest {
  // The chat request the reply runs as; its messages are set by the route (instructions,
  // the stored conversation of previous_response_id, then `input`).
  TextRequest text;
  std::vector<ChatMessage> input;           // this request's input items, as messages
  std::optional<std::string> instructions;  // a system message before everything
  std::optional<std::string> previous_response_id;
  bool store = true;
  // The request's fields the response object repeats (OpenAI's response echoes its
  // configuration): instructions, max_output_tokens, metadata, parallel_tool_calls,
  // reasoning, temperature, text, tool_choice, tools, top_p, truncation, user.
  nlohmann::json echo = nlohmann::json::object();
};

std::optional<ApiError> parse_responses_request(const nlohmann::json& body,
                                                const std::string& raw_body, ResponsesRequest& out);

// An error of the chat parsers, renamed to the Responses field it came from
// (response_format -> text.format, tools[i].function.x -> tools[i].x, max_tokens ->
// max_output_tokens, messages -> input).
ApiError responses_field_names(ApiError e);

// A tool message that names no function gets the name of the call it answers, found in
// the assistant messages before it (function_call_output items carry only call_id).
void name_tool_results(std::vector<ChatMessage>& messages);

}  // namespace hearth::server
