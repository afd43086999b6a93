// The tool-calling and reasoning fields of a chat request, OpenAI and Anthropic shapes,
// into TextRequest's neutral form: declared tools, tool_choice, parallel_tool_calls,
// assistant tool calls and tool results in the history, chat_template_kwargs /
// enable_thinking, and the thinking budget. Every rejection names the field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/chat_template.h"

namespace hearth::server {

struct TextRequest;

// tools, tool_choice, parallel_tool_calls, chat_template_kwargs, enable_thinking,
// thinking_budget_tokens.
std::optional<ApiError> parse_openai_tool_fields(const nlohmann::json& body, TextRequest& out);
// tools (name, description, input_schema), tool_choice ({type: auto|any|tool|none}),
// thinking ({type: enabled, budget_tokens} | {type: disabled}), chat_template_kwargs.
std::optional<ApiError> parse_anthropic_tool_fields(const nlohmann::json& body, TextRequest& out);

// The request body is parsed into nlohmann::json, whose objects sort their keys; a
// template prints the tools (tojson) into the prompt, where the caller's key order is
// what transformers and the model's training used. Re-reads the declared tools from the
// raw body in their own order (tools_json and each ToolSpec::parameters).
void keep_tool_key_order(const std::string& raw_body, bool anthropic, TextRequest& out);

// An OpenAI assistant message's tool_calls array.
std::optional<ApiError> parse_openai_tool_calls(const nlohmann::json& calls,
                                                const std::string& field,
                                                std::vector<ToolCall>& out);

// One Anthropic message whose content is an array of blocks: text, tool_use (assistant),
// tool_result (user; each becomes a "tool" message before the user's text), thinking
// (assistant: its reasoning_content, which the template replays or drops) and
// redacted_thinking (assistant; dropped: nothing to replay). Appends the neutral
// messages to `out`.
std::optional<ApiError> parse_anthropic_blocks(const nlohmann::json& content,
                                               const std::string& role, const std::string& field,
                                               std::vector<ChatMessage>& out);

}  // namespace hearth::server
