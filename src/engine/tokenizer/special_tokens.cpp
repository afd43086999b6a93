// Special-token partitioning: before the model's tokenizer runs, the input is cut
// at every occurrence of a special token's text, longest tokens first, so that e.g.
// "<|im_start|>user" yields the <|im_start|> id followed by tokenized "user".
#include "engine/tokenizer/tokenizer_impl.h"

namespace hearth::tokenizer {

std::vector<Fragment> partition_special(const Tokenizer::Impl& impl, std::string_view text,
                                        bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({text, -1});

  std::vector<Fragment> next;
  for (int32_t id : impl.special_tokens) {
    const TokenType type = impl.types[static_cast<size_t>(id)];
    // Control and unknown tokens are only recognised on request; user-defined
    // tokens always are (llama.cpp's rule).
    if (!parse_special && (type == TokenType::kControl || type == TokenType::kUnknown)) continue;
    const std::string& special = impl.vocab.tokens[static_cast<size_t>(id)];
    if (special.empty()) continue;

    bool changed = false;
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      std::string_view raw = f.text;
      for (size_t found = raw.find(special); found != std::string_view::npos;
           found = raw.find(special)) {
        changed = true;
        if (found > 0) next.push_back({raw.substr(0, found), -1});
        next.push_back({{}, id});
        raw = raw.substr(found + special.size());
      }
      if (!raw.empty()) next.push_back({raw, -1});
    }
    if (changed) fragments.swap(next);
  }
  return fragments;
}

}  // namespace hearth::tokenizer
