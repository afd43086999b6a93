// Chat prompt rendering without a Jinja engine. A GGUF's tokenizer.chat_template is
// Jinja text; rather than interpret it, we recognise which well-known family it
// implements by its marker strings and render that family natively. Unknown
// templates fall back to ChatML (with a warning from the caller).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hearth/text_range.h"
#include "server/output/tool_syntax.h"

namespace hearth::server {

enum class ChatFamily { kChatml, kLlama2, kLlama3, kMistral, kZephyr, kGemma, kPhi3 };

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}

  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  bool content_null = false;         // assistant with tool calls: content was null
  bool content_absent = false;       // assistant with tool calls: no content at all
  std::vector<ToolCall> tool_calls;  // assistant: the calls it made
  std::string tool_call_id;          // tool: the call this result answers
  std::string name;                  // tool: the function's name, when known
  std::string reasoning_content;     // assistant: its think block, for templates that replay it
};

// "chatml", "qwen" (alias of chatml), "llama-2", "llama-3", "mistral", "zephyr",
// "gemma", "phi-3"; nullopt for anything else.
std::optional<ChatFamily> chat_family_from_name(std::string_view name);
const char* chat_family_name(ChatFamily family);

// nullopt when no family's markers are present in the Jinja text.
std::optional<ChatFamily> detect_chat_family(std::string_view jinja_template);

// A rendered prompt and where its control-token text may become control tokens: the
// template's own text (markers, role names, separators). The messages' content is never
// in a range, so a user who types "<|im_end|>" gets those characters, not the token.
struct RenderedChat {
  std::string text;
  std::vector<TextRange> special_ranges;  // sorted, disjoint byte ranges of text
};

// Renders the conversation and the opening of the assistant's turn. The text
// carries no leading BOS: the tokenizer adds it (add_special), so it is never doubled.
RenderedChat render_chat(ChatFamily family, const std::vector<ChatMessage>& messages);

}  // namespace hearth::server
