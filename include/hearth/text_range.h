// Byte ranges of a text. The tokenizer seam uses a list of them to say where the text of
// control tokens (e.g. "<|im_start|>", "</s>") may become those tokens: a rendered chat
// prompt allows it only in the chat template's own text, never in message content, so a
// user cannot inject control tokens by typing them. One type from the server's chat
// renderer down to the tokenizer, so the ranges are never translated between layers.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace hearth {

struct TextRange {
  size_t begin = 0;  // byte offset, inclusive
  size_t end = 0;    // byte offset, exclusive
  bool operator==(const TextRange&) const = default;
};

// A parse_special flag as ranges: the whole text (true) or nowhere (false).
inline std::vector<TextRange> special_ranges_for(std::string_view text, bool parse_special) {
  if (!parse_special || text.empty()) return {};
  return {TextRange{0, text.size()}};
}

}  // namespace hearth
