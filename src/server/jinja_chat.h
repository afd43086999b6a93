// Chat prompts rendered by the model's own Jinja chat template (tokenizer.chat_template),
// the way transformers' apply_chat_template does, with hearth's Jinja engine. Only the
// template's own text (and bos_token / eos_token) may become control tokens: the render's
// literal ranges become RenderedChat::special_ranges, message content never does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hearth/status.h"
#include "server/chat_template.h"

namespace hearth::server {

struct ChatTemplateTokens {
  std::string bos_text;  // bos_token
  std::string eos_text;  // eos_token
  bool add_bos = false;  // the tokenizer prepends BOS itself
};

// Renders the conversation with add_generation_prompt. When the tokenizer adds BOS, a
// leading bos_token in the render is dropped, so BOS is never doubled. A template that
// raises (or does not parse) is an invalid_argument naming the line and column.
Result<RenderedChat> render_jinja_chat(std::string_view jinja_template,
                                       const std::vector<ChatMessage>& messages,
                                       const ChatTemplateTokens& tokens);

}  // namespace hearth::server
