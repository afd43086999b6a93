#include "server/responses/response_items.h"

#include <utility>

#include "server/http_util.h"

namespace hearth::server {
namespace {

using nlohmann::json;

json text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}};
}
json message_item() {
  return {{"id", make_id("msg_")},
          {"type", "message"},
          {"status", "in_progress"},
          {"role", "assistant"},
          {"content", json::array()}};
}
json summary_part(const std::string& text) {
  return {{"type", "summary_text"}, {"text", text}};
}

}  // namespace

void ResponseItems::open(json item, Events& out) {
  const auto index = output_.size();
  open_text_.clear();
  open_item_ = std::move(item);
  out.push_back(
      {{"type", "response.output_item.added"}, {"output_index", index}, {"item", open_item_}});
  const json& id = open_item_["id"];
  if (open_kind_ == OutputDelta::Kind::kContent) {
    out.push_back({{"type", "response.content_part.added"},
                   {"item_id", id},
                   {"output_index", index},
                   {"content_index", 0},
                   {"part", text_part("")}});
  } else if (open_kind_ == OutputDelta::Kind::kReasoning) {
    out.push_back({{"type", "response.reasoning_summary_part.added"},
                   {"item_id", id},
                   {"output_index", index},
                   {"summary_index", 0},
                   {"part", summary_part("")}});
  }
}

void ResponseItems::close(const std::string& status, Events& out) {
  if (open_item_.is_null()) return;
  const auto index = output_.size();
  json item = std::move(open_item_);
  open_item_ = nullptr;
  const json id = item["id"];
  switch (open_kind_) {
    case OutputDelta::Kind::kContent:
      out.push_back({{"type", "response.output_text.done"},
                     {"item_id", id},
                     {"output_index", index},
                     {"content_index", 0},
                     {"text", open_text_}});
      out.push_back({{"type", "response.content_part.done"},
                     {"item_id", id},
                     {"output_index", index},
                     {"content_index", 0},
                     {"part", text_part(open_text_)}});
      item["content"] = json::array({text_part(open_text_)});
      break;
    case OutputDelta::Kind::kReasoning:
      out.push_back({{"type", "response.reasoning_summary_text.done"},
                     {"item_id", id},
                     {"output_index", index},
                     {"summary_index", 0},
                     {"text", open_text_}});
      out.push_back({{"type", "response.reasoning_summary_part.done"},
                     {"item_id", id},
                     {"output_index", index},
                     {"summary_index", 0},
                     {"part", summary_part(open_text_)}});
      item["summary"] = json::array({summary_part(open_text_)});
      item["content"] = json::array({{{"type", "reasoning_text"}, {"text", open_text_}}});
      break;
    case OutputDelta::Kind::kToolCall:
      out.push_back({{"type", "response.function_call_arguments.done"},
                     {"item_id", id},
                     {"output_index", index},
                     {"arguments", item["arguments"]}});
      break;
  }
  item["status"] = status;
  out.push_back({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
  output_.push_back(std::move(item));
}

ResponseItems::Events ResponseItems::on_delta(const OutputDelta& d) {
  Events out;
  const bool same =
      !open_item_.is_null() && open_kind_ == d.kind && d.kind != OutputDelta::Kind::kToolCall;
  if (!same) {
    close("completed", out);
    open_kind_ = d.kind;
    switch (d.kind) {
      case OutputDelta::Kind::kContent:
        open(message_item(), out);
        break;
      case OutputDelta::Kind::kReasoning:
        open({{"id", make_id("rs_")}, {"type", "reasoning"}, {"summary", json::array()}}, out);
        break;
      case OutputDelta::Kind::kToolCall:
        open({{"id", make_id("fc_")},
              {"type", "function_call"},
              {"status", "in_progress"},
              {"call_id", d.call.id},
              {"name", d.call.name},
              {"arguments", ""}},
             out);
        break;
    }
  }
  const json id = open_item_["id"];
  const auto index = output_.size();
  switch (d.kind) {
    case OutputDelta::Kind::kContent:
      open_text_ += d.text;
      out.push_back({{"type", "response.output_text.delta"},
                     {"item_id", id},
                     {"output_index", index},
                     {"content_index", 0},
                     {"delta", d.text}});
      break;
    case OutputDelta::Kind::kReasoning:
      open_text_ += d.text;
      out.push_back({{"type", "response.reasoning_summary_text.delta"},
                     {"item_id", id},
                     {"output_index", index},
                     {"summary_index", 0},
                     {"delta", d.text}});
      break;
    case OutputDelta::Kind::kToolCall:
      open_item_["arguments"] = d.call.arguments;
      out.push_back({{"type", "response.function_call_arguments.delta"},
                     {"item_id", id},
                     {"output_index", index},
                     {"delta", d.call.arguments}});
      break;
  }
  return out;
}

ResponseItems::Events ResponseItems::finish(bool incomplete) {
  Events out;
  if (open_item_.is_null() && output_.empty()) {  // an empty reply is one empty message
    open_kind_ = OutputDelta::Kind::kContent;
    open(message_item(), out);
  }
  close(incomplete ? "incomplete" : "completed", out);
  return out;
}

std::string ResponseItems::output_text() const {
  std::string text;
  for (const json& item : output_)
    if (item["type"] == "message") text += item["content"][0]["text"].get<std::string>();
  return text;
}

ChatMessage ResponseItems::assistant_message() const {
  ChatMessage m{"assistant", ""};
  for (const json& item : output_) {
    if (item["type"] == "message") m.content += item["content"][0]["text"].get<std::string>();
    if (item["type"] == "reasoning")
      m.reasoning_content += item["summary"][0]["text"].get<std::string>();
    if (item["type"] == "function_call")
      m.tool_calls.push_back({item["call_id"], item["name"], item["arguments"]});
  }
  m.content_null = m.content.empty() && !m.tool_calls.empty();
  return m;
}

ResponseItems collect_items(const OutputSyntax& syntax, const std::string& text, bool incomplete) {
  ResponseItems items;
  OutputParser parser(syntax, [] { return make_id("call_"); });
  for (const OutputDelta& d : parser.push(text)) items.on_delta(d);
  for (const OutputDelta& d : parser.finish()) items.on_delta(d);
  items.finish(incomplete);
  return items;
}

}  // namespace hearth::server
