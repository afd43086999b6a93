#include "server/jinja_chat.h"

#include <nlohmann/json.hpp>

#include "hearth/jinja/template.h"

namespace hearth::server {

Result<RenderedChat> render_jinja_chat(std::string_view jinja_template,
                                       const std::vector<ChatMessage>& messages,
                                       const ChatTemplateTokens& tokens) {
  HEARTH_ASSIGN_OR_RETURN(jinja::Template tmpl, jinja::Template::parse(jinja_template));
  nlohmann::ordered_json ctx;
  ctx["messages"] = nlohmann::ordered_json::array();
  for (const auto& m : messages) {
    ctx["messages"].push_back({{"role", m.role}, {"content", m.content}});
  }
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = true;
  ctx["bos_token"] = tokens.bos_text;
  ctx["eos_token"] = tokens.eos_text;
  HEARTH_ASSIGN_OR_RETURN(jinja::RenderOutput out, tmpl.render(ctx, {"bos_token", "eos_token"}));
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
