// Chat prompts rendered by the model's own Jinja chat template (tokenizer.chat_template),
// the way transformers' apply_chat_template does, with hearth's Jinja engine. Only the
// template's own text (and bos_token / eos_token) may become control tokens: the render's
// literal ranges become RenderedChat::special_ranges, message content never does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "hearth/jinja/template.h"
#include "hearth/status.h"
#include "server/chat_template.h"

namespace hearth::server {

struct ChatTemplateTokens {
  std::string bos_text;  // bos_token
  std::string eos_text;  // eos_token
  bool add_bos = false;  // the tokenizer prepends BOS itself
};

// What a request adds to the template's variables besides the messages.
struct ChatRenderOptions {
  nlohmann::ordered_json tools;  // null, or [{type: "function", function: {...}}]
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();  // chat_template_kwargs
  jinja::RenderOptions render;  // limits, and strftime_now's instant (tests pin it)
};

// The messages as the template sees them (transformers' shape): role, content (null for
// an assistant turn with only tool calls), tool_calls [{id, type, function: {name,
// arguments}}], tool_call_id and name. arguments_as_objects: function.arguments as the
// parsed object (what most templates index or pipe through tojson) rather than the
// JSON text the OpenAI API carries.
nlohmann::ordered_json chat_messages_json(const std::vector<ChatMessage>& messages,
                                          bool arguments_as_objects, bool null_content_as_empty);

// Renders the conversation with add_generation_prompt. Tool calls in the history are
// passed with their arguments as objects and an assistant turn with only calls with its
// content as the caller gave it (null, or none). A template that raises on that is
// rendered again with "" for that content (Qwen3's does `'</think>' in content`), then
// with the arguments as JSON text (DeepSeek-R1's concatenates them), the first render
// that succeeds wins; if none does, the first error is returned. When the tokenizer adds BOS, a
// leading bos_token in the render is dropped, so BOS is never doubled. A template that
// raises (or does not parse) is an invalid_argument naming the line and column.
Result<RenderedChat> render_jinja_chat(std::string_view jinja_template,
                                       const std::vector<ChatMessage>& messages,
                                       const ChatTemplateTokens& tokens,
                                       const ChatRenderOptions& options = {});

}  // namespace hearth::server
