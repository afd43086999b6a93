#include "server/jinja_chat.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "hearth/jinja/template.h"

namespace hearth::server {

nlohmann::ordered_json chat_messages_json(const std::vector<ChatMessage>& messages,
                                          bool arguments_as_objects, bool null_content_as_empty) {
  using nlohmann::ordered_json;
  ordered_json list = ordered_json::array();
  for (const auto& m : messages) {
    ordered_json msg = {{"role", m.role}};
    if ((m.content_null || m.content_absent) && null_content_as_empty) {
      msg["content"] = "";
    } else if (m.content_null) {
      msg["content"] = nullptr;
    } else if (!m.content_absent) {
      msg["content"] = m.content;
    }
    if (!m.tool_calls.empty()) {
      ordered_json calls = ordered_json::array();
      for (const ToolCall& c : m.tool_calls) {
        ordered_json args = c.arguments;
        if (arguments_as_objects) {
          ordered_json parsed = ordered_json::parse(c.arguments, nullptr, false);
          if (!parsed.is_discarded() && parsed.is_object()) args = std::move(parsed);
        }
        calls.push_back({{"id", c.id},
                         {"type", "function"},
                         {"function", {{"name", c.name}, {"arguments", std::move(args)}}}});
      }
      msg["tool_calls"] = std::move(calls);
    }
    if (!m.reasoning_content.empty()) msg["reasoning_content"] = m.reasoning_content;
    if (m.role == "tool") {
      msg["tool_call_id"] = m.tool_call_id;
      if (!m.name.empty()) msg["name"] = m.name;
    }
    list.push_back(std::move(msg));
  }
  return list;
}

Result<RenderedChat> render_jinja_chat(std::string_view jinja_template,
                                       const std::vector<ChatMessage>& messages,
                                       const ChatTemplateTokens& tokens,
                                       const ChatRenderOptions& options) {
  HEARTH_ASSIGN_OR_RETURN(jinja::Template tmpl, jinja::Template::parse(jinja_template));
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  for (const auto& [k, v] : options.kwargs.items()) ctx[k] = v;
  ctx["messages"] = chat_messages_json(messages, true, false);
  ctx["tools"] =
      options.tools.is_array() && !options.tools.empty() ? options.tools : nlohmann::ordered_json();
  if (!ctx.contains("documents")) ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = true;
  ctx["bos_token"] = tokens.bos_text;
  ctx["eos_token"] = tokens.eos_text;
  auto rendered = tmpl.render(ctx, {"bos_token", "eos_token"}, options.render);
  const bool has_calls = std::any_of(messages.begin(), messages.end(),
                                     [](const ChatMessage& m) { return !m.tool_calls.empty(); });
  // The fallbacks, in order: "" for null content; then arguments as text (with the
  // content as given, then with "").
  for (auto [objects, empty] : {std::pair{true, true}, {false, false}, {false, true}}) {
    if (rendered.ok() || !has_calls) break;
    ctx["messages"] = chat_messages_json(messages, objects, empty);
    auto again = tmpl.render(ctx, {"bos_token", "eos_token"}, options.render);
    if (again.ok()) rendered = std::move(again);
  }
  if (!rendered.ok()) return rendered.status();
  jinja::RenderOutput out = std::move(rendered).value();
  RenderedChat chat{std::move(out.text), std::move(out.literal_ranges)};
  const std::string& bos = tokens.bos_text;
  if (tokens.add_bos && !bos.empty() && chat.text.compare(0, bos.size(), bos) == 0) {
    chat.text.erase(0, bos.size());
    std::vector<TextRange> shifted;
    for (const auto& r : chat.special_ranges) {
      const size_t b = r.begin < bos.size() ? bos.size() : r.begin;
      if (r.end > b) shifted.push_back({b - bos.size(), r.end - bos.size()});
    }
    chat.special_ranges = std::move(shifted);
  }
  return chat;
}

}  // namespace hearth::server
