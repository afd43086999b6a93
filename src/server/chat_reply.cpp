#include "server/chat_reply.h"

namespace hearth::server {
namespace {

using nlohmann::json;

// The arguments as the object they are (Anthropic's input); {} if they are not one.
json arguments_object(const std::string& arguments) {
  json v = json::parse(arguments, nullptr, false);
  return v.is_object() ? v : json::object();
}

}  // namespace

json openai_message(const ParsedOutput& parsed) {
  json msg = {{"role", "assistant"}};
  msg["content"] =
      parsed.calls.empty() || !parsed.content.empty() ? json(parsed.content) : json(nullptr);
  if (!parsed.reasoning.empty()) msg["reasoning_content"] = parsed.reasoning;
  if (!parsed.calls.empty()) {
    json calls = json::array();
    for (const ToolCall& c : parsed.calls) {
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    msg["tool_calls"] = std::move(calls);
  }
  return msg;
}

std::string openai_finish_reason(const std::string& generation_reason, int32_t tool_calls) {
  // The token limit wins: a reply cut short (maybe inside a call) is "length", as OpenAI.
  if (generation_reason == "length") return generation_reason;
  return tool_calls > 0 ? "tool_calls" : generation_reason;
}

std::vector<json> openai_deltas(const OutputDelta& d) {
  switch (d.kind) {
    case OutputDelta::Kind::kContent:
      return {{{"content", d.text}}};
    case OutputDelta::Kind::kReasoning:
      return {{{"reasoning_content", d.text}}};
    case OutputDelta::Kind::kToolCall:
      return {{{"tool_calls",
                {{{"index", d.index},
                  {"id", d.call.id},
                  {"type", "function"},
                  {"function", {{"name", d.call.name}, {"arguments", ""}}}}}}},
              {{"tool_calls",
                {{{"index", d.index}, {"function", {{"arguments", d.call.arguments}}}}}}}};
  }
  return {};
}

json anthropic_content(const ParsedOutput& parsed) {
  json blocks = json::array();
  if (!parsed.reasoning.empty())
    blocks.push_back({{"type", "thinking"}, {"thinking", parsed.reasoning}, {"signature", ""}});
  if (!parsed.content.empty() || parsed.calls.empty())
    blocks.push_back({{"type", "text"}, {"text", parsed.content}});
  for (const ToolCall& c : parsed.calls) {
    blocks.push_back({{"type", "tool_use"},
                      {"id", c.id},
                      {"name", c.name},
                      {"input", arguments_object(c.arguments)}});
  }
  return blocks;
}

std::string anthropic_stop_reason(const std::string& reason, int32_t tool_calls) {
  if (reason == "max_tokens") return reason;  // cut short, maybe inside a tool_use
  return tool_calls > 0 ? "tool_use" : reason;
}

void AnthropicBlockStream::open(const json& block, Events& out) {
  ++index_;
  is_open_ = true;
  out.emplace_back(
      "content_block_start",
      json{{"type", "content_block_start"}, {"index", index_}, {"content_block", block}});
}

void AnthropicBlockStream::close(Events& out) {
  if (!is_open_) return;
  if (open_kind_ == OutputDelta::Kind::kReasoning) {
    out.emplace_back("content_block_delta",
                     json{{"type", "content_block_delta"},
                          {"index", index_},
                          {"delta", {{"type", "signature_delta"}, {"signature", ""}}}});
  }
  out.emplace_back("content_block_stop", json{{"type", "content_block_stop"}, {"index", index_}});
  is_open_ = false;
}

AnthropicBlockStream::Events AnthropicBlockStream::on_delta(const OutputDelta& d) {
  Events out;
  const bool same = is_open_ && open_kind_ == d.kind && d.kind != OutputDelta::Kind::kToolCall;
  if (!same) {
    close(out);
    open_kind_ = d.kind;
    switch (d.kind) {
      case OutputDelta::Kind::kContent:
        open({{"type", "text"}, {"text", ""}}, out);
        break;
      case OutputDelta::Kind::kReasoning:
        open({{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, out);
        break;
      case OutputDelta::Kind::kToolCall:
        open({{"type", "tool_use"},
              {"id", d.call.id},
              {"name", d.call.name},
              {"input", json::object()}},
             out);
        break;
    }
  }
  json delta;
  switch (d.kind) {
    case OutputDelta::Kind::kContent:
      delta = {{"type", "text_delta"}, {"text", d.text}};
      break;
    case OutputDelta::Kind::kReasoning:
      delta = {{"type", "thinking_delta"}, {"thinking", d.text}};
      break;
    case OutputDelta::Kind::kToolCall:
      delta = {{"type", "input_json_delta"}, {"partial_json", d.call.arguments}};
      break;
  }
  out.emplace_back("content_block_delta",
                   json{{"type", "content_block_delta"}, {"index", index_}, {"delta", delta}});
  return out;
}

AnthropicBlockStream::Events AnthropicBlockStream::finish() {
  Events out;
  if (index_ < 0) {
    open_kind_ = OutputDelta::Kind::kContent;
    open({{"type", "text"}, {"text", ""}}, out);
  }
  close(out);
  return out;
}

}  // namespace hearth::server
