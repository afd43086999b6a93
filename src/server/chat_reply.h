// A chat reply's structured parts (server/output: content, reasoning, tool calls) in the
// OpenAI and Anthropic wire shapes, whole and as stream events. The routes own the
// envelopes (ids, usage, SSE framing); this file owns where each part goes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/output/output_parser.h"

namespace hearth::server {

// OpenAI: message {role, content (null when only calls), reasoning_content, tool_calls}.
nlohmann::json openai_message(const ParsedOutput& parsed);
// OpenAI finish_reason: "length" when the token limit cut the reply (calls or not), else
// "tool_calls" when the reply made calls, else the generation's.
std::string openai_finish_reason(const std::string& generation_reason, int32_t tool_calls);
// The `delta` objects of the chunks one parser delta becomes: content, reasoning_content,
// or a tool call as two chunks (index, id, type and name first; then its arguments).
std::vector<nlohmann::json> openai_deltas(const OutputDelta& delta);

// Anthropic: content blocks [thinking?, text?, tool_use...].
nlohmann::json anthropic_content(const ParsedOutput& parsed);
// Anthropic stop_reason: "max_tokens" when the limit cut the reply (calls or not), else
// "tool_use" when the reply made calls, else `reason`.
std::string anthropic_stop_reason(const std::string& reason, int32_t tool_calls);

// Anthropic's streamed blocks: each kind of delta opens its own content block (thinking,
// text, one tool_use per call) and the previous one is stopped first. Returns
// (event name, data) pairs in order.
class AnthropicBlockStream {
 public:
  using Events = std::vector<std::pair<std::string, nlohmann::json>>;
  Events on_delta(const OutputDelta& delta);
  Events finish();  // stops the open block; an empty reply still gets one text block

 private:
  void open(const nlohmann::json& block, Events& out);
  void close(Events& out);
  OutputDelta::Kind open_kind_ = OutputDelta::Kind::kContent;
  bool is_open_ = false;
  int index_ = -1;
};

}  // namespace hearth::server
